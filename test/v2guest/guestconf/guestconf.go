// Package guestconf is the configuration make test-v2's host side hands to
// the guest's init (test/v2guest/initd) in the initramfs.
package guestconf

import "time"

// Files the init writes to the output share.
const (
	// OutputFile holds the command's standard output.
	OutputFile = "output"
	// RCFile holds the command's exit status (124: it ran past its
	// timeout; 120: the guest could not be set up).
	RCFile = "rc"
)

// Share is a host directory the guest mounts over 9p.
type Share struct {
	// Tag is the virtio-9p mount tag.
	Tag string `json:"tag"`
	// Path is where the guest mounts it (the host's own path).
	Path string `json:"path"`
	// Writable shares are mounted read-write (the output share only).
	Writable bool `json:"writable,omitempty"`
}

// Config is /v2guest.json in the initramfs.
type Config struct {
	// Modules are the kernel modules to load, in order (paths in the
	// initramfs).
	Modules []string `json:"modules"`
	// Shares are mounted after the modules are loaded, in order.
	Shares []Share `json:"shares"`
	// OutDir is the writable share's path.
	OutDir string `json:"outDir"`
	// Hostname is the guest's host name.
	Hostname string `json:"hostname,omitempty"`
	// Argv is the command; Dir its working directory; Env added to a
	// minimal environment (HOME, PATH).
	Argv []string `json:"argv"`
	Dir  string   `json:"dir,omitempty"`
	Env  []string `json:"env,omitempty"`
	// StderrToOutput sends the command's standard error to OutputFile too
	// (else to the guest's console).
	StderrToOutput bool `json:"stderrToOutput,omitempty"`
	// CgroupV1 mounts the cgroup v1 controllers, each on its own, with a
	// controller-less cgroup2 at /sys/fs/cgroup/unified (a hybrid host, as
	// systemd.unified_cgroup_hierarchy=0 makes it), instead of cgroup2 with
	// every controller: the same kernel and emulator for a v1 baseline.
	CgroupV1 bool `json:"cgroupV1,omitempty"`
	// Timeout bounds the command (0: none).
	Timeout time.Duration `json:"timeout,omitempty"`
	// Scratch, when set, is where the init mounts the guest's scratch
	// disk (ext4 on ScratchDevice): a real block device, so that files
	// written there are reclaimable page cache, not tmpfs memory.
	Scratch string `json:"scratch,omitempty"`
	// Node makes the guest a node a real kubelet and container runtime
	// can own: / a shared mount (the kubelet's Bidirectional and
	// HostToContainer mounts need shared peers, as systemd makes every
	// mount on a node), /etc and /usr writable, overlays (a tmpfs over the
	// host's read-only shares, so that the pods' hostPath directories there
	// can be made); the overlay module is among Modules.
	Node bool `json:"node,omitempty"`
}

// ScratchDevice is the scratch disk's device in the guest (the first
// virtio block device).
const ScratchDevice = "/dev/vda"

// ScratchEnv tells the command where the scratch disk is mounted.
const ScratchEnv = "KOORDLET_YARN_SCRATCH"
