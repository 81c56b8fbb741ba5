// Command demo shows YARN container discovery on this node: it plays a
// NodeManager (REST API and LinuxContainerExecutor-style cgroups with real
// processes) and runs the koordlet-yarn statesinformer plugin, installed the
// way cmd/koordlet installs it, against the real kernel. It prints what the
// plugin's /yarn/containers endpoint serves as containers start and exit,
// then removes everything it created. It needs root and cgroup v1.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/koordinator-sh/koordinator/cmd/koordlet/options"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"

	"github.com/koordlet-yarn/koordlet-yarn/framework"
	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

const cgroupRoot = "/sys/fs/cgroup"

type container struct {
	id     string
	state  string
	mb     int
	vcores int
	cmd    *exec.Cmd
}

// nodeManager plays the NM: REST API plus container cgroups in cpu and memory.
type nodeManager struct {
	hierarchy string
	mu        sync.Mutex
	list      []*container
}

func (nm *nodeManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/ws/v1/node/containers" {
		http.NotFound(w, r)
		return
	}
	nm.mu.Lock()
	defer nm.mu.Unlock()
	var entries []string
	for _, c := range nm.list {
		entries = append(entries, fmt.Sprintf(`{"id":%q,"state":%q,"user":"spark","totalMemoryNeededMB":%d,"totalVCoresNeeded":%d,"executionType":"GUARANTEED","exitCode":-1000}`,
			c.id, c.state, c.mb, c.vcores))
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"containers":{"container":[%s]}}`, strings.Join(entries, ","))
}

func (nm *nodeManager) add(c *container) {
	nm.mu.Lock()
	nm.list = append(nm.list, c)
	nm.mu.Unlock()
}

func (nm *nodeManager) setState(c *container, state string) {
	nm.mu.Lock()
	c.state = state
	nm.mu.Unlock()
}

// launch creates the container's cgroups and starts its process in them,
// as the LinuxContainerExecutor does.
func (nm *nodeManager) launch(c *container, script string) error {
	var dirs []string
	for _, ctrl := range []string{"cpu", "memory"} {
		dir := filepath.Join(cgroupRoot, ctrl, nm.hierarchy, c.id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		dirs = append(dirs, dir)
	}
	cmd := exec.Command("sh", "-c", "read gate; "+script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	for _, dir := range dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			return err
		}
	}
	_, _ = stdin.Write([]byte("go\n"))
	c.cmd = cmd
	nm.setState(c, "RUNNING")
	return nil
}

// exit kills the container's processes and removes its cgroups.
func (nm *nodeManager) exit(c *container, state string) {
	if c.cmd != nil {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		_ = c.cmd.Wait()
	}
	for _, ctrl := range []string{"cpu", "memory"} {
		removeTree(filepath.Join(cgroupRoot, ctrl, nm.hierarchy, c.id))
	}
	nm.setState(c, state)
}

func removeTree(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		for attempt := 0; attempt < 50; attempt++ {
			if b, err := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs")); err == nil {
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			if err := os.Remove(dirs[i]); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root to create cgroups")
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		return fmt.Errorf("needs cgroup v1; %s is cgroup v2", cgroupRoot)
	}
	top := fmt.Sprintf("koordlet-yarn-demo-%d", os.Getpid())
	nm := &nodeManager{hierarchy: top + "/hadoop-yarn"}
	defer func() {
		for _, c := range nm.list {
			nm.exit(c, "DONE")
		}
		for _, ctrl := range []string{"cpu", "memory"} {
			removeTree(filepath.Join(cgroupRoot, ctrl, top))
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	nmServer := &httptest.Server{Listener: ln, Config: &http.Server{Handler: nm}}
	nmServer.Start()
	defer nmServer.Close()

	// Install the plugin set as cmd/koordlet does, with the flags a user sets.
	system.Conf.CgroupRootDir = cgroupRoot + "/"
	system.Conf.ProcRootDir = "/proc/"
	fs := flag.NewFlagSet("koordlet", flag.ContinueOnError)
	fw, err := framework.Install(fs)
	if err != nil {
		return err
	}
	if err := fs.Parse([]string{"--yarn-nm-endpoint=" + nmServer.URL, "--yarn-cgroup-hierarchy=/" + nm.hierarchy, "--yarn-resync-interval=500ms"}); err != nil {
		return err
	}
	if err := fw.Validate(); err != nil {
		return err
	}
	fmt.Printf("NodeManager emulator on %s, YARN hierarchy /%s in cpu and memory\n", nmServer.URL, nm.hierarchy)
	events := make(chan store.Event, 64)
	unsubscribe := fw.Store.Subscribe("demo", func(ev store.Event) { events <- ev })
	defer unsubscribe()
	fw.Informer.Setup(nil, nil)
	stop := make(chan struct{})
	defer close(stop)
	go fw.Informer.Start(stop)

	app := "1700000000000_0042"
	am := &container{id: "container_e17_" + app + "_01_000001", state: "NEW", mb: 1024, vcores: 1}
	ex1 := &container{id: "container_e17_" + app + "_01_000002", state: "NEW", mb: 4096, vcores: 2}
	ex2 := &container{id: "container_e17_" + app + "_01_000003", state: "LOCALIZING", mb: 4096, vcores: 2}
	for _, c := range []*container{am, ex1, ex2} {
		nm.add(c)
	}
	step("the ApplicationMaster forks a child; executor 1 starts; executor 2 is still localizing")
	if err := nm.launch(am, "sleep 600 & exec sleep 600"); err != nil {
		return err
	}
	if err := nm.launch(ex1, "exec sleep 600"); err != nil {
		return err
	}
	watch(events, 4*time.Second)
	show(fw)

	step("executor 2 starts; executor 1 exits")
	if err := nm.launch(ex2, "exec sleep 600"); err != nil {
		return err
	}
	nm.exit(ex1, "EXITED_WITH_SUCCESS")
	watch(events, 3*time.Second)
	show(fw)
	return nil
}

func step(s string) { fmt.Printf("\n== %s\n", s) }

// watch prints store events for d.
func watch(events <-chan store.Event, d time.Duration) {
	deadline := time.After(d)
	for {
		select {
		case ev := <-events:
			c := ev.Container
			fmt.Printf("  store event: %-7s %s state=%s source=%s pids=%v\n", ev.Type, c.Name, c.State, c.Source, c.Pids)
		case <-deadline:
			return
		}
	}
}

// show prints what GET /yarn/containers serves.
func show(fw *framework.Framework) {
	handler := options.ExtendedHTTPHandlerRegistry[framework.ContainersPath]()
	rec := httptest.NewRecorder()
	handler(rec, httptest.NewRequest(http.MethodGet, framework.ContainersPath, nil))
	var resp framework.ContainersResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		fmt.Println("  decode /yarn/containers:", err)
		return
	}
	fmt.Printf("  GET %s -> %d containers (NM %s, hierarchy found %v)\n", framework.ContainersPath, len(resp.Containers), resp.Informer.NMEndpoint, resp.Informer.HierarchyFound)
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CONTAINER\tAM\tSTATE\tSOURCE\tCPU(m)\tMEM(MiB)\tPIDS\tCPU CGROUP\tMEMORY CGROUP")
	for _, c := range resp.Containers {
		fmt.Fprintf(tw, "  %s\t%v\t%s\t%s\t%d\t%d\t%v\t%s\t%s\n", c.Name, c.IsAM, c.State, c.Source,
			c.RequestMilliCPU, c.RequestMemoryBytes>>20, c.Pids, c.Cgroups[cgroups.CPU].Dir, c.Cgroups[cgroups.Memory].Dir)
	}
	_ = tw.Flush()
}
