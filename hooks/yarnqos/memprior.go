package yarnqos

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// MemoryQoSMarker is the trusted xattr on a YARN container's memory cgroup
// that records, per Memory QoS file koordlet wrote, the value it held before
// ({"memory.low":"0",…}). Withdrawing Memory QoS (the gate, the NodeSLO or
// a policy tier turning it off, even after a koordlet restart) writes those
// values back: what YARN or the kernel had is restored, never a guess.
const MemoryQoSMarker = "trusted.koordlet-yarn.memory-qos-prior"

// memoryQoSFiles are the files Memory QoS writes.
var memoryQoSFiles = []system.ResourceType{system.MemoryMinName, system.MemoryLowName, system.MemoryHighName,
	system.MemoryWmarkRatioName, system.MemoryWmarkScaleFactorName, system.MemoryWmarkMinAdjName,
	system.MemoryPriorityName, system.MemoryUsePriorityOomName, system.MemoryOomGroupName}

// memoryDir is the absolute memory cgroup dir of rel.
func memoryDir(rel string) string {
	r, err := system.GetCgroupResource(system.MemoryLimitName)
	if err != nil {
		return ""
	}
	return filepath.Dir(r.Path(rel))
}

// readPrior returns the recorded prior values of dir (nil: none).
func readPrior(dir string) map[string]string {
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(dir, MemoryQoSMarker, buf)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	if json.Unmarshal(buf[:n], &out) != nil {
		return nil
	}
	return out
}

// writePrior records prior on dir; an empty record removes the xattr.
func writePrior(dir string, prior map[string]string) error {
	if len(prior) == 0 {
		if err := unix.Removexattr(dir, MemoryQoSMarker); err != nil && !errors.Is(err, unix.ENODATA) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(prior)
	if err != nil {
		return err
	}
	return unix.Setxattr(dir, MemoryQoSMarker, b, 0)
}

// Withdrawn returns, sorted, the files of a prior record that the wanted
// updaters no longer set: those get their prior value back.
func Withdrawn(prior map[string]string, wanted map[string]bool) []string {
	var out []string
	for f := range prior {
		if !wanted[f] {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// applyMemory records, before koordlet's first write to each Memory QoS
// file of the container, the value it held, writes ups, and writes back the
// prior value of every file koordlet wrote that ups no longer set (Memory
// QoS turned off by the NodeSLO or a policy tier, or a field unset). It
// returns how many files changed. The caller holds a.mu.
func (a *Applier) applyMemory(c *store.Container, ups []resourceexecutor.ResourceUpdater) int {
	ref := c.Cgroups[cgroups.Memory]
	if !ref.Owned {
		return 0
	}
	dir := memoryDir(ref.Dir)
	if dir == "" {
		return 0
	}
	prior := readPrior(dir)
	if prior == nil {
		prior = map[string]string{}
	}
	wanted := map[string]bool{}
	recorded := false
	for _, u := range ups {
		f := string(u.ResourceType())
		wanted[f] = true
		if _, ok := prior[f]; ok {
			continue
		}
		b, err := os.ReadFile(u.Path())
		if err != nil {
			continue
		}
		prior[f] = strings.TrimSpace(string(b))
		recorded = true
	}
	if recorded {
		if err := writePrior(dir, prior); err != nil {
			if a.said.First("memory-qos-prior") {
				klog.Warningf("yarn: Memory QoS cannot record the prior values on %s (xattr %s: %v): YARN containers' Memory QoS is not written on this node, since it could not be withdrawn", dir, MemoryQoSMarker, err)
			}
			return 0
		}
	}
	return a.update(c.Name, ups) + a.restoreMemory(c.Name, ref.Dir, dir, prior, Withdrawn(prior, wanted))
}

// restoreMemory writes back the prior values of files and drops them from
// the record (the xattr goes with the last one). The caller holds a.mu.
func (a *Applier) restoreMemory(name, rel, dir string, prior map[string]string, files []string) int {
	if len(files) == 0 {
		return 0
	}
	n := 0
	for _, f := range files {
		u, err := resourceexecutor.NewCommonCgroupUpdater(system.ResourceType(f), rel, prior[f], nil)
		if err != nil {
			delete(prior, f)
			continue
		}
		// Cacheable: the executor must know the file holds the prior
		// value again, or turning Memory QoS back on would be skipped.
		if _, err := a.executor.Update(true, u); err != nil {
			if os.IsNotExist(err) || resourceexecutor.IsCgroupDirErr(err) {
				delete(prior, f) // the container is gone
				continue
			}
			klog.V(4).Infof("yarn: withdraw %s of container %s (back to %q): %v", f, name, prior[f], err)
			continue
		}
		n++
		a.wrote(f, 1)
		delete(prior, f)
	}
	if err := writePrior(dir, prior); err != nil && !os.IsNotExist(err) && !errors.Is(err, unix.ENOENT) {
		klog.V(4).Infof("yarn: update %s on %s: %v", MemoryQoSMarker, dir, err)
	}
	return n
}

// restoreMemoryDisabled gives every container cgroup under the YARN root
// that carries MemoryQoSMarker its prior Memory QoS values back (the gate
// YARNMemoryQoS is off). The caller holds a.mu.
func (a *Applier) restoreMemoryDisabled(root string) int {
	rootAbs := memoryDir(root)
	if rootAbs == "" {
		return 0
	}
	n := 0
	for _, name := range childDirs(rootAbs) {
		dir := filepath.Join(rootAbs, name)
		if prior := readPrior(dir); len(prior) > 0 {
			n += a.restoreMemory(name, filepath.Join(root, name), dir, prior, Withdrawn(prior, nil))
		}
	}
	return n
}
