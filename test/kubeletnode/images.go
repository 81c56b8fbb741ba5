package kubeletnode

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Registry is where the node's images are: an OCI registry in this
// process (go-containerregistry's), on loopback, which containerd pulls
// from over plain HTTP. The kubelet pulls as it would from any registry:
// the DaemonSet's imagePullPolicy Always is kept as shipped.
const Registry = "127.0.0.1:5000"

// Images of the node: the sandbox (pause), koordlet-yarn's (bin/koordlet
// and the libraries it links, as the stock koordlet image has them), and
// the test pods' (podbin; those pods mount the host's /usr).
var (
	PauseImage    = Registry + "/pause:3.10"
	KoordletImage = Registry + "/koordinator-sh/koordlet-yarn:v1.8.0-yarn"
	PodImage      = Registry + "/koordlet-yarn-test/podbin:test"
)

// serveRegistry starts a registry on addr; the returned func stops it.
func serveRegistry(addr string) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the image registry: %w", err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}

// file is one entry of an image layer: a regular file from the host, a
// directory or a symlink.
type file struct {
	path   string // in the image, without the leading /
	src    string // host file (regular files)
	link   string // symlink target
	dir    bool
	mode   int64
	mtime  time.Time
	length int64
}

// layerOf makes one uncompressed layer (containerd takes
// application/vnd.oci.image.layer.v1.tar as it is: no gzip under the
// guest's emulated CPU).
func layerOf(files []file) (v1.Layer, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.path, Mode: f.mode, ModTime: f.mtime, Format: tar.FormatPAX}
		switch {
		case f.dir:
			h.Typeflag, h.Name = tar.TypeDir, f.path+"/"
		case f.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, f.length
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			in, err := os.Open(f.src)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(tw, in)
			in.Close()
			if err != nil {
				return nil, fmt.Errorf("layer: copy %s: %w", f.src, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer), nil
}

// hostFile is the host file src at path in the image (its mode kept).
func hostFile(path, src string) (file, error) {
	st, err := os.Stat(src)
	if err != nil {
		return file{}, fmt.Errorf("image file: %w", err)
	}
	return file{path: strings.TrimPrefix(path, "/"), src: src, mode: int64(st.Mode().Perm()), mtime: st.ModTime(), length: st.Size()}, nil
}

// usrLinks are the merged-/usr links of a Debian root: the test pods mount
// the host's /usr and run its shell and tools through them.
func usrLinks() []file {
	var fs []file
	for _, d := range []string{"bin", "sbin", "lib", "lib64"} {
		fs = append(fs, file{path: d, link: "usr/" + d, mode: 0o777})
	}
	for _, d := range []string{"usr", "tmp", "etc", "proc", "sys", "dev", "host-cgroup"} {
		fs = append(fs, file{path: d, dir: true, mode: 0o755})
	}
	return fs
}

// libraries are the shared objects bin needs, as the dynamic loader finds
// them on this host (its DT_NEEDED entries, recursively, and its
// interpreter), so that a dynamically linked binary runs in an image that
// has only them.
func libraries(bin string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	var walk func(string) error
	dirs := []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib"}
	walk = func(p string) error {
		f, err := elf.Open(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		defer f.Close()
		if interp := f.Section(".interp"); interp != nil && p == bin {
			b, err := interp.Data()
			if err != nil {
				return err
			}
			ld := strings.TrimRight(string(b), "\x00")
			if !seen[ld] {
				seen[ld] = true
				out = append(out, ld)
			}
		}
		needed, err := f.DynString(elf.DT_NEEDED)
		if err != nil {
			return nil // static
		}
		for _, n := range needed {
			found := ""
			for _, d := range dirs {
				if _, err := os.Stat(filepath.Join(d, n)); err == nil {
					found = filepath.Join(d, n)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s needs %s, which is not in %v", p, n, dirs)
			}
			if seen[found] {
				continue
			}
			seen[found] = true
			out = append(out, found)
			if err := walk(found); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(bin)
}

// image is one layer of files with an entrypoint.
func image(files []file, entrypoint []string) (v1.Image, error) {
	layer, err := layerOf(files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Config.Entrypoint = entrypoint
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	return mutate.ConfigFile(img, cfg)
}

// stockTools are the programs of the stock koordlet image (Ubuntu's
// util-linux and libc-bin) that koordlet runs: lscpu for the node's CPU
// topology, lsblk and findmnt for its storage, getconf for the clock tick.
var stockTools = []string{"/usr/bin/lscpu", "/usr/bin/lsblk", "/usr/bin/findmnt", "/usr/bin/getconf"}

// koordletImage is koordlet-yarn's image from bin/koordlet: /koordlet (the
// stock image's ENTRYPOINT and the chart's command), the stock image's
// tools koordlet runs, and the libraries they link at their host paths,
// the C library's loader among them.
func koordletImage(koordlet string) (v1.Image, error) {
	bin, err := hostFile("koordlet", koordlet)
	if err != nil {
		return nil, err
	}
	files := []file{bin}
	seen := map[string]bool{}
	var libs []string
	for _, b := range append([]string{koordlet}, stockTools...) {
		if b != koordlet {
			f, err := hostFile(b, b)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
		ls, err := libraries(b)
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			if !seen[l] {
				seen[l] = true
				libs = append(libs, l)
			}
		}
	}
	dirs := map[string]bool{"usr": true, "usr/bin": true}
	files = append(files, file{path: "usr", dir: true, mode: 0o755}, file{path: "usr/bin", dir: true, mode: 0o755})
	for _, l := range libs {
		real, err := filepath.EvalSymlinks(l)
		if err != nil {
			return nil, err
		}
		f, err := hostFile(l, real)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		for d := filepath.Dir(f.path); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			files = append(files, file{path: d, dir: true, mode: 0o755})
		}
	}
	for _, d := range []string{"tmp", "etc", "proc", "sys", "dev"} {
		if !dirs[d] {
			files = append(files, file{path: d, dir: true, mode: 0o755})
		}
	}
	return image(files, []string{"/koordlet"})
}

// pushImages builds the node's images and pushes them to the registry.
func pushImages(koordlet, podbin string) error {
	pb, err := hostFile("podbin", podbin)
	if err != nil {
		return err
	}
	pause, err := image([]file{pb}, []string{"/podbin", "pause"})
	if err != nil {
		return fmt.Errorf("the pause image: %w", err)
	}
	pod, err := image(append(usrLinks(), pb), []string{"/podbin"})
	if err != nil {
		return fmt.Errorf("the test pods' image: %w", err)
	}
	kl, err := koordletImage(koordlet)
	if err != nil {
		return fmt.Errorf("koordlet-yarn's image: %w", err)
	}
	for ref, img := range map[string]v1.Image{PauseImage: pause, PodImage: pod, KoordletImage: kl} {
		r, err := name.ParseReference(ref, name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(r, img); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
	}
	return nil
}
