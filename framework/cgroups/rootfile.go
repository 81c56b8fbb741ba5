package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordinator-sh/koordinator/pkg/koordlet/resourceexecutor"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/util/system"
)

// RootFile is the one writer of one value of the YARN hierarchy root that
// koordlet changes for a while and gives back (the CFS quota, memory.high,
// the v1 memory soft limit): it records the root's own value before
// koordlet's first write in a trusted xattr on the root's controller dir,
// writes through koordlet's resource executor (not cacheable: the value on
// the file is what counts) and puts the own value back.
//
// The record is never taken from a value koordlet wrote. The current value
// counts as koordlet's when
//  1. a record exists: it is kept as it is, whatever the root holds now
//     (a koordlet that wrote the root and then died, or whose restore
//     failed, left both);
//  2. this process wrote that value and has not put the own value back
//     since (the writer remembers the last value it wrote per root): with
//     no record then (the xattr removed from outside, or not settable
//     before), the own value is unknown and Unlimited is recorded.
//
// Across a restart only (1) applies; where a trusted xattr cannot be set
// (koordlet without CAP_SYS_ADMIN), nothing is recorded, said once, and
// the root gets Unlimited back only from the process that wrote it. The
// record outlives koordlet: a later koordlet, whatever its gates, restores
// from it.
type RootFile struct {
	spec RootFileSpec
	mu   sync.Mutex
	// written is the last value this process wrote per root (absolute
	// controller dir), until the own value is back.
	written map[string]int64
	// said: a record could not be made, said once.
	said bool
}

// RootFileSpec says which value a RootFile writes and how.
type RootFileSpec struct {
	// Name names the value in logs and errors ("cfs quota").
	Name string
	// Resource is koordlet's resource of the file for this host's cgroup
	// version (nil: none here; every call fails).
	Resource func() (system.Resource, error)
	// Xattr is the trusted xattr that records the own value.
	Xattr string
	// Read reads the root's value (Unlimited for "max" or no limit).
	Read func(rel string) (int64, error)
	// Format is the value written for v (nil: decimal).
	Format func(v int64) string
	// Unlimited is the value of no limit (-1 for the quota; the largest
	// int64 for memory limits).
	Unlimited int64
	// Valid reports whether a recorded value can be written back (nil:
	// any); an invalid record restores Unlimited.
	Valid func(v int64) bool
	// Update is koordlet's update function for the file (nil:
	// resourceexecutor.CommonCgroupUpdateFunc).
	Update resourceexecutor.UpdateFunc
}

// ErrNoRootDir is a write to a YARN root whose controller directory does
// not exist (yet: the NodeManager makes it at its start, and again after
// it removed it).
var ErrNoRootDir = errors.New("the YARN hierarchy has no directory in this controller (yet)")

// NewRootFile returns a writer of spec's value. koordlet has one per value,
// made by Install and handed to every writer of that value, so that what
// one wrote the others know.
func NewRootFile(spec RootFileSpec) *RootFile {
	return &RootFile{spec: spec, written: map[string]int64{}}
}

// Dir is the absolute controller dir of rel that holds the file and the
// record ("" when this host has no such file).
func (f *RootFile) Dir(rel string) string {
	if f == nil || f.spec.Resource == nil {
		return ""
	}
	r, err := f.spec.Resource()
	if err != nil || r == nil {
		return ""
	}
	return filepath.Dir(r.Path(rel))
}

// Set records rel's own value (unless recorded) and writes v. A record
// that cannot be made is said once; the write goes on.
func (f *RootFile) Set(rel string, v int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.rootExists(rel); err != nil {
		return err
	}
	if err := f.record(rel); err != nil && !f.said {
		f.said = true
		klog.Warningf("yarn: cannot record the own %s of the YARN hierarchy %s before koordlet writes it (%v); only this koordlet can give it back (unlimited)", f.spec.Name, rel, err)
	}
	if err := f.write(rel, v); err != nil {
		return err
	}
	f.written[f.Dir(rel)] = v
	return nil
}

// Own returns rel's own value: the record, else the current value unless
// this process wrote it (then Unlimited: unknown).
func (f *RootFile) Own(rel string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if prior, ok := f.readRecord(f.Dir(rel)); ok {
		return prior, nil
	}
	return f.current(rel)
}

// Read reads rel's value now.
func (f *RootFile) Read(rel string) (int64, error) { return f.spec.Read(rel) }

// Written returns the value this process last wrote on rel, while it has
// not put the own value back.
func (f *RootFile) Written(rel string) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.written[f.Dir(rel)]
	return v, ok
}

// Restore writes rel's own value back and removes the record: the
// recorded value, else Unlimited when this process wrote rel's value
// without a record. restored is false (and nothing is written) when
// koordlet never wrote it: the value is its owner's and is left alone.
func (f *RootFile) Restore(rel string) (restored bool, v int64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir := f.Dir(rel)
	if err := f.rootExists(rel); errors.Is(err, ErrNoRootDir) {
		// Gone with its directory: nothing to give back.
		delete(f.written, dir)
		return false, 0, nil
	}
	v, ok := f.readRecord(dir)
	if !ok {
		if _, wrote := f.written[dir]; !wrote {
			return false, 0, nil
		}
		v = f.spec.Unlimited
	}
	if err := f.write(rel, v); err != nil {
		return false, v, err
	}
	delete(f.written, dir)
	if err := unix.Removexattr(dir, f.spec.Xattr); err != nil && !errors.Is(err, unix.ENODATA) {
		// Harmless: the record is the value just written; the next restore writes it again.
		klog.V(4).Infof("yarn: remove %s from %s: %v", f.spec.Xattr, dir, err)
	}
	return true, v, nil
}

// Forget drops koordlet's claim on rel's value without writing it: the
// record and what this process wrote (another writer owns the value now;
// a restore would overwrite it).
func (f *RootFile) Forget(rel string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir := f.Dir(rel)
	delete(f.written, dir)
	if dir == "" {
		return
	}
	if err := unix.Removexattr(dir, f.spec.Xattr); err != nil && !errors.Is(err, unix.ENODATA) {
		klog.V(4).Infof("yarn: remove %s from %s: %v", f.spec.Xattr, dir, err)
	}
}

// Recorded reports whether the YARN root rel still carries the record of
// its own value: koordlet wrote it and has not put the own one back.
func (f *RootFile) Recorded(rel string) bool {
	_, ok := f.readRecord(f.Dir(rel))
	return ok
}

// record records rel's own value unless a record exists (caller holds mu).
func (f *RootFile) record(rel string) error {
	dir := f.Dir(rel)
	if dir == "" {
		return fmt.Errorf("no %s file for %s on this host", f.spec.Name, rel)
	}
	if _, err := unix.Getxattr(dir, f.spec.Xattr, make([]byte, 32)); err == nil {
		return nil
	}
	own, err := f.current(rel)
	if err != nil {
		return err
	}
	if err := unix.Setxattr(dir, f.spec.Xattr, []byte(strconv.FormatInt(own, 10)), 0); err != nil {
		return fmt.Errorf("record the %s of %s (xattr %s): %w", f.spec.Name, dir, f.spec.Xattr, err)
	}
	return nil
}

// current is rel's value now, or Unlimited when this process wrote it
// (caller holds mu).
func (f *RootFile) current(rel string) (int64, error) {
	cur, err := f.spec.Read(rel)
	if err != nil {
		return 0, fmt.Errorf("read the %s of %s: %w", f.spec.Name, rel, err)
	}
	if w, ok := f.written[f.Dir(rel)]; ok && w == cur {
		return f.spec.Unlimited, nil // koordlet's own value: the owner's is unknown
	}
	return cur, nil
}

// readRecord returns the value recorded on dir.
func (f *RootFile) readRecord(dir string) (int64, bool) {
	if dir == "" {
		return 0, false
	}
	buf := make([]byte, 32)
	n, err := unix.Getxattr(dir, f.spec.Xattr, buf)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(buf[:n])), 10, 64)
	if err != nil || (f.spec.Valid != nil && !f.spec.Valid(v)) {
		v = f.spec.Unlimited
	}
	return v, true
}

// rootExists fails with ErrNoRootDir when rel has no directory in the
// file's controller. koordlet's executor reports a write into a missing
// cgroup directory as done (it ignores that error): a root that does not
// exist (yet) is an error here, so that the caller writes again once it
// does.
func (f *RootFile) rootExists(rel string) error {
	dir := f.Dir(rel)
	if dir == "" {
		return fmt.Errorf("no %s file for %s on this host", f.spec.Name, rel)
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("set the %s of %s: %w", f.spec.Name, rel, ErrNoRootDir)
	}
	return nil
}

// write sets rel's value through koordlet's resource executor (not
// cacheable: other writers may have changed the file since). Its callers
// (Set, Restore) have checked that rel's directory exists (rootExists).
func (f *RootFile) write(rel string, v int64) error {
	r, err := f.spec.Resource()
	if err != nil {
		return fmt.Errorf("set the %s of %s: %w", f.spec.Name, rel, err)
	}
	value := strconv.FormatInt(v, 10)
	if f.spec.Format != nil {
		value = f.spec.Format(v)
	}
	update := f.spec.Update
	if update == nil {
		update = resourceexecutor.CommonCgroupUpdateFunc
	}
	u, err := resourceexecutor.NewDetailCgroupUpdater(r, rel, value, update, nil)
	if err == nil {
		_, err = resourceexecutor.NewResourceUpdateExecutor().Update(false, u)
	}
	if err != nil {
		return fmt.Errorf("set the %s of %s to %s: %w", f.spec.Name, rel, value, err)
	}
	return nil
}
