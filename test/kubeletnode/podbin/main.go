// Command podbin is the one program in the real-kubelet guest's test images
// (test/kubeletnode): built static, it is the sandbox's pause process, the
// NodeManager pod's NodeManager (the NM emulator, launching YARN containers
// the way the LinuxContainerExecutor does on cgroup v2), and the LS and BE
// pods' workload, chosen by its first argument:
//
//	podbin pause
//	podbin nodemanager -cgroup-root /host-cgroup -hierarchy kubepods/besteffort/hadoop-yarn
//	podbin serve -listen :8080 -hold-mib 64
//	podbin alloc -mib 2048 -rate 128
//	podbin sleep
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: podbin pause|nodemanager|serve|alloc|sleep [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "pause", "sleep":
		err = pause()
	case "nodemanager":
		err = nodeManager(os.Args[2:])
	case "serve":
		err = serve(os.Args[2:])
	case "alloc":
		err = alloc(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "podbin:", err)
		os.Exit(1)
	}
}

// pause waits for SIGTERM or SIGINT, reaping the orphans a sandbox's
// first process inherits meanwhile.
func pause() error {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			return nil
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
	return nil
}

// terminated returns a channel closed at SIGTERM or SIGINT.
func terminated() <-chan struct{} {
	done := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		close(done)
	}()
	return done
}
