package v2guest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cavaliergopher/cpio"

	"github.com/koordlet-yarn/koordlet-yarn/test/v2guest/guestconf"
)

// rootLinks are the merged-/usr links of a Debian root: the guest mounts
// the host's /usr and reaches /bin, /lib... through them.
var rootLinks = map[string]string{
	"bin":   "usr/bin",
	"sbin":  "usr/sbin",
	"lib":   "usr/lib",
	"lib64": "usr/lib64",
}

// writeInitramfs writes the guest's initramfs (newc cpio, uncompressed: the
// kernel reads it as is) to path: initBinary as /init, the modules under
// /modules in load order, cfg as /v2guest.json (its Modules set here), the
// merged-/usr links and the directories the init mounts on.
func writeInitramfs(path, initBinary string, modules []string, cfg guestconf.Config) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := cpio.NewWriter(f)
	add := func(name string, mode cpio.FileMode, body []byte, link string) error {
		h := &cpio.Header{Name: name, Mode: mode, Size: int64(len(body)), Linkname: link}
		if link != "" {
			h.Size = int64(len(link))
		}
		if err := w.WriteHeader(h); err != nil {
			return fmt.Errorf("initramfs %s: %w", name, err)
		}
		if link != "" {
			_, err = io.WriteString(w, link)
		} else {
			_, err = w.Write(body)
		}
		if err != nil {
			return fmt.Errorf("initramfs %s: %w", name, err)
		}
		return nil
	}
	err = func() error {
		for _, d := range []string{"dev", "proc", "sys", "etc", "usr", "tmp", "run", "root", "var", "modules"} {
			if err := add(d, cpio.TypeDir|0o755, nil, ""); err != nil {
				return err
			}
		}
		for name, target := range rootLinks {
			if err := add(name, cpio.TypeSymlink|0o777, nil, target); err != nil {
				return err
			}
		}
		init, err := os.ReadFile(initBinary)
		if err != nil {
			return fmt.Errorf("read the guest init: %w", err)
		}
		if err := add("init", cpio.TypeReg|0o755, init, ""); err != nil {
			return err
		}
		cfg.Modules = nil
		for i, m := range modules {
			body, err := os.ReadFile(m)
			if err != nil {
				return fmt.Errorf("read module: %w", err)
			}
			name := fmt.Sprintf("modules/%02d-%s", i, filepath.Base(m))
			if err := add(name, cpio.TypeReg|0o644, body, ""); err != nil {
				return err
			}
			cfg.Modules = append(cfg.Modules, "/"+name)
		}
		conf, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return err
		}
		return add("v2guest.json", cpio.TypeReg|0o644, conf, "")
	}()
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
