package v2guest

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMakeScratch: the scratch image is sparse, of the size asked, and
// holds an ext4 file system (its superblock's magic at 1024+56).
func TestMakeScratch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scratch.img")
	require.NoError(t, makeScratch(path, 64))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, int64(64<<20), st.Size())
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	magic := make([]byte, 2)
	_, err = f.ReadAt(magic, 1024+56)
	require.NoError(t, err)
	assert.Equal(t, uint16(0xEF53), binary.LittleEndian.Uint16(magic), "ext4's superblock magic")
	assert.Error(t, makeScratch(filepath.Join(t.TempDir(), "missing", "scratch.img"), 64), "a directory that does not exist")
}
