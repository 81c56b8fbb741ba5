package yarnpeer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// classSharing is the class-data sharing (AppCDS) of one kind of the
// peer's JVMs: the classes it loaded in an earlier run are mapped from an
// archive instead of being parsed and verified again. Under the v2 guest's
// emulated CPU, loading Hadoop's classes is most of a JVM's start.
//
// Per Hadoop version and role (the peer's JVM, the NodeManager's own), in
// build/yarn/<v> (one for every container executor: the classes an
// archive lacks are loaded as usual; ~90 MB each): a JVM run where neither
// the archive nor the class list exists, and the build directory is
// writable (the host; the guest sees it read-only), writes the classes it
// loads (-XX:DumpLoadedClassList: no work at its exit); once it has
// stopped, finish keeps the list and dumps the archive from it with
// java -Xshare:dump (a few seconds, once). A JVM where the archive exists
// maps it; a JDK or class path it does not match is ignored (-Xshare:auto,
// the default). Nothing is shared where neither exists.
type classSharing struct {
	archive, list, listTmp, classPath string
}

func newClassSharing(top, version, role, classPath string) classSharing {
	dir := BuildDir(top, version)
	c := classSharing{archive: filepath.Join(dir, role+".jsa"), list: filepath.Join(dir, role+".classlist"), classPath: classPath}
	if !exists(c.archive) && !exists(c.list) && unix.Access(dir, unix.W_OK) == nil {
		c.listTmp = c.list + ".tmp-" + strconv.Itoa(os.Getpid())
	}
	return c
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// args are the JVM's flags for it.
func (c classSharing) args() []string {
	switch {
	case c.listTmp != "":
		return []string{"-XX:DumpLoadedClassList=" + c.listTmp}
	case exists(c.archive):
		return []string{"-XX:SharedArchiveFile=" + c.archive}
	}
	return nil
}

// finish, after the JVM stopped, keeps the class list it wrote and dumps
// the archive from it; a failed dump leaves no archive (the next host run
// tries again).
func (c classSharing) finish() error {
	if c.listTmp == "" || !exists(c.listTmp) {
		return nil
	}
	if err := os.Rename(c.listTmp, c.list); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tmp := c.archive + ".tmp-" + strconv.Itoa(os.Getpid())
	out, err := exec.CommandContext(ctx, "java", "-Xshare:dump", "-XX:+UseSerialGC", "-XX:SharedClassListFile="+c.list,
		"-XX:SharedArchiveFile="+tmp, "-cp", c.classPath).CombinedOutput()
	if err != nil {
		_ = os.Remove(tmp)
		_ = os.Remove(c.list)
		return fmt.Errorf("class-data sharing archive %s: %w: %s", c.archive, err, tail(string(out), 5))
	}
	return os.Rename(tmp, c.archive)
}
