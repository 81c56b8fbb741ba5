package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// WriteProcs moves process pid into the cgroup dir (dir/cgroup.procs). A
// direct write, not koordinator's resource executor: the executor caches
// the last value per file (a second process would look like a rewrite of
// the same file, and a pid written again after a failed move would be
// skipped), and a mover needs the kernel's error per process.
func WriteProcs(dir string, pid int) error {
	f, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.Itoa(pid))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Marked reports whether the directory dir carries the xattr name with
// value. The error is the stat's (os.IsNotExist when dir is missing); an
// absent or unsupported xattr is no mark.
func Marked(dir, name, value string) (bool, error) {
	if _, err := os.Stat(dir); err != nil {
		return false, err
	}
	buf := make([]byte, len(value)+8)
	n, err := unix.Getxattr(dir, name, buf)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, err
		}
		return false, nil
	}
	return string(buf[:n]) == value, nil
}
