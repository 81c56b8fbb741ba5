package kubeletnode

import (
	"archive/tar"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLibraries: a dynamically linked host program's shared objects, its
// loader among them, as the loader would find them.
func TestLibraries(t *testing.T) {
	libs, err := libraries("/usr/bin/lscpu")
	require.NoError(t, err)
	assert.Contains(t, libs, "/lib64/ld-linux-x86-64.so.2", "the loader (the program's interpreter)")
	found := false
	for _, l := range libs {
		if l == "/lib/x86_64-linux-gnu/libc.so.6" || l == "/usr/lib/x86_64-linux-gnu/libc.so.6" {
			found = true
		}
	}
	assert.True(t, found, "the C library, reached through libsmartcols and the rest: %v", libs)
	_, err = libraries("/nonexistent")
	assert.Error(t, err)
}

// TestKoordletImageThroughRegistry: koordlet-yarn's image, built from a
// host program standing for bin/koordlet, pushed to the in-process
// registry and pulled back: the chart's command (/koordlet), the stock
// image's tools and every library they need are in its one layer.
func TestKoordletImageThroughRegistry(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	stop, err := serveRegistry(addr)
	require.NoError(t, err)
	defer stop()

	img, err := koordletImage("/usr/bin/true")
	require.NoError(t, err)
	ref, err := name.ParseReference(addr+"/koordinator-sh/koordlet-yarn:test", name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img))

	got, err := remote.Image(ref)
	require.NoError(t, err)
	cfg, err := got.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, []string{"/koordlet"}, cfg.Config.Entrypoint)
	layers, err := got.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	names := map[string]bool{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		names[h.Name] = true
	}
	for _, want := range []string{"koordlet", "usr/bin/lscpu", "usr/bin/getconf", "lib64/ld-linux-x86-64.so.2"} {
		assert.True(t, names[want], "%s in the image", want)
	}
	libs, err := libraries("/usr/bin/lscpu")
	require.NoError(t, err)
	for _, l := range libs {
		assert.True(t, names[l[1:]], "%s (lscpu's) in the image", l)
	}
}

// TestInGuestRefusesThisHost: the node never starts outside the guest.
func TestInGuestRefusesThisHost(t *testing.T) {
	assert.Error(t, InGuest(), "the unit tests run on the host")
}
