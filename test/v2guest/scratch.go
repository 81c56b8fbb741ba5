package v2guest

import (
	"fmt"
	"os"
	"os/exec"
)

// scratchModules are the modules the scratch disk needs (with their
// dependencies, from modules.dep): virtio's block device, ext4, and the
// crc32c its metadata checksums take from the crypto API (ext4's softdep,
// which no modprobe loads here: without it the mount fails with ENOENT).
var scratchModules = []string{"virtio_blk", "crc32c_generic", "ext4"}

// scratchMount is where the guest mounts its scratch disk.
const scratchMount = "/scratch"

// makeScratch makes path a sparse image of mib MiB holding an empty ext4
// file system (mkfs.ext4 from e2fsprogs, which every Debian has).
func makeScratch(path string, mib int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create the scratch image: %w", err)
	}
	err = f.Truncate(int64(mib) << 20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("size the scratch image: %w", err)
	}
	mkfs, err := lookSbin("mkfs.ext4")
	if err != nil {
		return fmt.Errorf("the guest's scratch disk needs mkfs.ext4 (apt-get install e2fsprogs): %w", err)
	}
	// No lazy initialisation left for the guest's kernel thread to do
	// under the emulated CPU; -F: a regular file, not a device.
	out, err := exec.Command(mkfs, "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", "-L", "scratch", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.ext4 %s: %w\n%s", path, err, out)
	}
	return nil
}

// lookSbin finds name on PATH or in the sbin directories a root shell has
// (a user's PATH may lack them).
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := d + "/" + name
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH, /usr/sbin or /sbin", name)
}
