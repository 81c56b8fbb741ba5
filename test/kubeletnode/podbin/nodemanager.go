package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/nmemu"
)

// NodeManager pod's ports: YARN's NodeManager web port
// (yarn.nodemanager.webapp.address) and the test's control port, where the
// harness asks for containers as a ResourceManager would.
const (
	nmPort      = 8042
	controlPort = 8043
)

// nodeManager runs the NM emulator in the NodeManager pod on cgroup v2:
// Hadoop 3.5's v2 handler's layout (one unified directory per container
// under the hierarchy), the hierarchy under the host's cgroups mounted at
// cgroup-root (the pod mounts the host's /sys/fs/cgroup there, as
// Koordinator's hadoop-yarn chart does at /host-cgroup/). At SIGTERM it
// kills its containers and removes the cgroups it made, as a NodeManager's
// stop does.
func nodeManager(args []string) error {
	fs := flag.NewFlagSet("nodemanager", flag.ContinueOnError)
	root := fs.String("cgroup-root", "/host-cgroup", "the host's cgroup2 mount in this container")
	hierarchy := fs.String("hierarchy", "kubepods/besteffort/hadoop-yarn", "the YARN hierarchy (yarn.nodemanager.linux-container-executor.cgroups.hierarchy), relative to cgroup-root")
	nodeID := fs.String("node-id", "", "the NodeManager's node id (default: <hostname>:45454)")
	noCgroups := fs.Bool("no-container-cgroups", false, "launch as Hadoop before 3.5 does on cgroup v2 (its LCE cgroups handlers are v1-only): no container cgroups, every container process in this pod's cgroup")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nodeID == "" {
		h, _ := os.Hostname()
		*nodeID = h + ":45454"
	}
	self, err := ownCgroup()
	if err != nil {
		return err
	}
	nm := nmemu.New(nmemu.Config{
		CgroupRoot: *root, Hierarchy: strings.Trim(*hierarchy, "/"), Controllers: []string{""},
		PodCgroup: self, PodControllers: []string{""}, NodeID: *nodeID, NoContainerCgroups: *noCgroups,
		LaunchDelay: 200 * time.Millisecond,
	})
	defer nm.Close()
	// The control port first: the pod's readiness probe asks the NM REST
	// port, so a ready pod takes requests on both.
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", controlPort))
	if err != nil {
		return fmt.Errorf("control port: %w", err)
	}
	srv := &http.Server{Handler: control(nm), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	if _, err := nm.Listen(fmt.Sprintf(":%d", nmPort)); err != nil {
		return err
	}
	fmt.Printf("nodemanager: NM REST on :%d, control on :%d, hierarchy %s/%s, pod cgroup %s\n", nmPort, controlPort, *root, *hierarchy, self)
	<-terminated()
	fmt.Println("nodemanager: stopping: killing the containers, removing their cgroups")
	return nil
}

// ownCgroup is this process's cgroup2 path (privileged containers share
// the host's cgroup namespace, so it is the host's path).
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			if strings.HasPrefix(p, "/..") {
				return "", fmt.Errorf("this container has a private cgroup namespace (%s): run it privileged", p)
			}
			return strings.Trim(p, "/"), nil
		}
	}
	return "", errors.New("no cgroup2 line in /proc/self/cgroup")
}

// control serves the harness's requests: POST /launch with an nmemu.Spec
// (JSON) launches a container and answers its id; POST /exit?id= ends
// one as the NodeManager does; GET /pid?id= gives its main process's pid
// (in this pod's pid namespace).
func control(nm *nmemu.NM) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /launch", func(w http.ResponseWriter, r *http.Request) {
		var spec nmemu.Spec
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&spec); err != nil {
			http.Error(w, "bad spec: "+err.Error(), http.StatusBadRequest)
			return
		}
		id, err := nm.Launch(spec)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte(id))
	})
	mux.HandleFunc("POST /exit", func(w http.ResponseWriter, r *http.Request) {
		nm.Exit(r.URL.Query().Get("id"))
	})
	mux.HandleFunc("GET /pid", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, nm.Pid(r.URL.Query().Get("id")))
	})
	return mux
}
