// Command lswaitcost measures the kernel-side cost of koordlet's LS CPU
// wait probe (make measure-lswait-cost): it turns on the kernel's BPF
// run-time statistics (kernel.bpf_stats_enabled; the value it found is put
// back at the end), samples the run time of the probe's programs
// (on_wakeup, on_wakeup_new, on_switch) over a window, repeatedly, and
// prints their CPU share of one CPU with the events per second. Run it
// beside a koordlet that has the probe loaded (YARNLSCPUWait, on by
// default), e.g. during make measure-colocation. Needs root.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/koordlet-yarn/koordlet-yarn/collectors/lswait"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

const statsSysctl = "/proc/sys/kernel/bpf_stats_enabled"

var probeProgs = map[string]bool{"on_wakeup": true, "on_wakeup_new": true, "on_switch": true}

type sample struct {
	runtime time.Duration
	count   uint64
	progs   int
}

// only, when set, limits read to these program ids (the probe this
// command loaded: another one loaded beside it is not counted).
var only map[ebpf.ProgramID]bool

// read sums the run time and run count of the probe's loaded programs.
func read() (sample, error) {
	var s sample
	id := ebpf.ProgramID(0)
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return s, nil
		}
		if err != nil {
			return s, fmt.Errorf("list BPF programs: %w", err)
		}
		id = next
		if only != nil && !only[id] {
			continue
		}
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // gone
		}
		info, err := p.Info()
		p.Close()
		if err != nil || !probeProgs[info.Name] {
			continue
		}
		rt, _ := info.Runtime()
		rc, _ := info.RunCount()
		s.runtime += rt
		s.count += rc
		s.progs++
	}
}

func main() {
	window := flag.Duration("window", 30*time.Second, "one measurement window")
	repeats := flag.Int("repeats", 5, "windows")
	own := flag.String("probe-ls-cgroup", "", "load the probe here instead of measuring koordlet's, watching this cpu (v1) cgroup directory as an LS pod's (its tasks' waits are timed); nothing is marked batch")
	flag.Parse()
	if *own != "" {
		p, err := openOwn(*own)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lswaitcost:", err)
			os.Exit(1)
		}
		defer p.Close()
	}
	prev, err := os.ReadFile(statsSysctl)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lswaitcost:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(statsSysctl, []byte("1"), 0); err != nil {
		fmt.Fprintln(os.Stderr, "lswaitcost: enable BPF run-time statistics:", err)
		os.Exit(1)
	}
	defer func() { _ = os.WriteFile(statsSysctl, []byte(strings.TrimSpace(string(prev))), 0) }()
	var shares []string
	for i := 0; i < *repeats; i++ {
		a, err := read()
		if err != nil {
			fmt.Fprintln(os.Stderr, "lswaitcost:", err)
			return
		}
		if a.progs == 0 { // koordlet restarting, or not running with YARNLSCPUWait
			fmt.Printf("window %d: the probe's programs are not loaded; waiting a window\n", i+1)
			time.Sleep(*window)
			continue
		}
		time.Sleep(*window)
		b, err := read()
		if err != nil {
			fmt.Fprintln(os.Stderr, "lswaitcost:", err)
			return
		}
		if b.runtime < a.runtime || b.count < a.count || b.progs != a.progs {
			fmt.Printf("window %d: the probe was reloaded (koordlet restarted); not counted\n", i+1)
			continue
		}
		rt, n := b.runtime-a.runtime, b.count-a.count
		share := 100 * rt.Seconds() / window.Seconds()
		per := time.Duration(0)
		if n > 0 {
			per = rt / time.Duration(n)
		}
		shares = append(shares, fmt.Sprintf("%.3f%%", share))
		fmt.Printf("window %d: %d programs, %.0f runs/s, %v per run, %.3f%% of one CPU\n", i+1, b.progs, float64(n)/window.Seconds(), per, share)
	}
	fmt.Printf("probe CPU, %% of one CPU per window: %s\n", strings.Join(shares, ", "))
}

// openOwn loads the probe (cgroup v1) and watches dir into slot 1.
func openOwn(dir string) (*lswait.Probe, error) {
	hid, err := cgroups.HierarchyID(cgroups.Hierarchy{CgroupRoot: "/sys/fs/cgroup"}, cgroups.CPU)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, err
	}
	before := map[ebpf.ProgramID]bool{}
	for id := ebpf.ProgramID(0); ; {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			break
		}
		before[next], id = true, next
	}
	p, err := lswait.OpenProbe(false)
	if err != nil {
		return nil, err
	}
	only = map[ebpf.ProgramID]bool{}
	for id := ebpf.ProgramID(0); ; {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			break
		}
		if !before[next] {
			only[next] = true
		}
		id = next
	}
	if err := p.Watch(lswait.CgroupKey{HierarchyID: hid, ID: st.Ino}, 1); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}
