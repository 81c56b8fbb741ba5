package v2guest

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cavaliergopher/cpio"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest/guestconf"
)

// fakeKernel lays out a kernel package's files: an image and modules.dep.
func fakeKernel(t *testing.T, dep, builtin string) Kernel {
	t.Helper()
	dir := t.TempDir()
	mods := filepath.Join(dir, "lib/modules/6.1.0-99-amd64")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "boot"), 0o755))
	require.NoError(t, os.MkdirAll(mods, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "boot/vmlinuz-6.1.0-99-amd64"), []byte("kernel"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mods, "modules.dep"), []byte(dep), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mods, "modules.builtin"), []byte(builtin), 0o644))
	k, err := FindKernel(dir)
	require.NoError(t, err)
	return k
}

func TestModuleFiles(t *testing.T) {
	dep := `kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko
kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko
kernel/fs/netfs/netfs.ko:
kernel/net/9p/9pnet.ko:
kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio.ko:
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
`
	k := fakeKernel(t, dep, "kernel/drivers/block/loop.ko\n")
	assert.Equal(t, "6.1.0-99-amd64", k.Release)
	got, err := k.moduleFiles([]string{"virtio_pci", "9pnet-virtio", "9p", "loop"})
	require.NoError(t, err)
	var rel []string
	for _, f := range got {
		r, err := filepath.Rel(k.ModulesDir, f)
		require.NoError(t, err)
		rel = append(rel, r)
	}
	assert.Equal(t, []string{
		"kernel/drivers/virtio/virtio_pci_legacy_dev.ko", "kernel/drivers/virtio/virtio_pci_modern_dev.ko",
		"kernel/drivers/virtio/virtio.ko", "kernel/drivers/virtio/virtio_ring.ko", "kernel/drivers/virtio/virtio_pci.ko",
		"kernel/net/9p/9pnet.ko", "kernel/net/9p/9pnet_virtio.ko",
		"kernel/fs/netfs/netfs.ko", "kernel/fs/fscache/fscache.ko", "kernel/fs/9p/9p.ko",
	}, rel, "dependencies first, each once; a built-in module needs no file")

	_, err = k.moduleFiles([]string{"nosuch"})
	assert.ErrorContains(t, err, "has no module nosuch")
}

func TestFindKernelMissing(t *testing.T) {
	_, err := FindKernel(t.TempDir())
	assert.ErrorContains(t, err, "no kernel")
}

// TestInitramfs: the archive holds the init, the modules in load order, the
// configuration naming them, and the merged-/usr links.
func TestInitramfs(t *testing.T) {
	dir := t.TempDir()
	initBin := filepath.Join(dir, "init")
	require.NoError(t, os.WriteFile(initBin, []byte("init-binary"), 0o755))
	var mods []string
	for _, m := range []string{"a.ko", "b.ko"} {
		p := filepath.Join(dir, m)
		require.NoError(t, os.WriteFile(p, []byte("module "+m), 0o644))
		mods = append(mods, p)
	}
	out := filepath.Join(dir, "initramfs.cpio")
	require.NoError(t, writeInitramfs(out, initBin, mods, guestconf.Config{Argv: []string{"/bin/true"}, OutDir: "/out"}))

	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	r := cpio.NewReader(f)
	files := map[string]string{}
	links := map[string]string{}
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(r)
		require.NoError(t, err)
		if h.Mode&cpio.ModeType == cpio.TypeSymlink {
			links[h.Name] = h.Linkname // the reader takes the target out of the body
			continue
		}
		files[h.Name] = string(body)
	}
	assert.Equal(t, "init-binary", files["init"])
	assert.Equal(t, "module a.ko", files["modules/00-a.ko"])
	assert.Equal(t, "module b.ko", files["modules/01-b.ko"])
	assert.Equal(t, "usr/bin", links["bin"])
	assert.Equal(t, "usr/lib", links["lib"])
	var cfg guestconf.Config
	require.NoError(t, json.Unmarshal([]byte(files["v2guest.json"]), &cfg))
	assert.Equal(t, []string{"/modules/00-a.ko", "/modules/01-b.ko"}, cfg.Modules)
	assert.Equal(t, []string{"/bin/true"}, cfg.Argv)
}

// TestSuiteSources: each of the host's Debian releases gives the same
// release of the suite on the same mirror, main, once; other origins are
// left out.
func TestSuiteSources(t *testing.T) {
	key := "[signed-by=" + debianKeyring + "]"
	for _, tc := range []struct {
		name, targets, want, err string
	}{
		{
			name: "bookworm host",
			targets: "http://mirror.example/debian/ Debian bookworm\n" +
				"http://mirror.example/debian/ Debian bookworm-updates\n" +
				"http://mirror.example/debian/ Debian bookworm\n" +
				"http://mirror.example/debian-security/ Debian bookworm-security\n" +
				"https://vendor.example/apt Vendor nodistro\n",
			want: "deb " + key + " http://mirror.example/debian/ bullseye main\n" +
				"deb " + key + " http://mirror.example/debian/ bullseye-updates main\n" +
				"deb " + key + " http://mirror.example/debian-security/ bullseye-security main\n",
		},
		{name: "no Debian mirror", targets: "https://vendor.example/apt Vendor nodistro\n", err: "name no Debian mirror"},
		{name: "no targets", targets: "", err: "name no Debian mirror"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := suiteSources(tc.targets, "bullseye")
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
