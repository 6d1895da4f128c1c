// Command pause is the sandbox image of the e2e control plane's real node: containerd's CRI
// starts one per pod to hold its namespaces, and registry.k8s.io/pause cannot be pulled here.
// Like Kubernetes' pause it sleeps until told to stop, and as the pod's PID 1 (when pods share
// a process namespace) it reaps the zombies that orphaned children leave.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			// A stop request: the sandbox goes away cleanly.
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every child that has exited; one SIGCHLD may stand for several.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
