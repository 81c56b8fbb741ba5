package koordletyarn

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoticeNamesDerivedFiles: LICENSE is Apache-2.0, and every file NOTICE
// lists as derived from Koordinator exists and carries Koordinator's
// copyright notice, the license and what it derives from (Apache-2.0 §4).
func TestNoticeNamesDerivedFiles(t *testing.T) {
	lic, err := os.ReadFile("LICENSE")
	require.NoError(t, err)
	assert.Contains(t, string(lic), "Apache License\n                           Version 2.0, January 2004")

	f, err := os.Open("NOTICE")
	require.NoError(t, err)
	defer f.Close()
	entry := regexp.MustCompile(`^  (\S+\.go)$`)
	var files []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := entry.FindStringSubmatch(sc.Text()); m != nil {
			files = append(files, m[1])
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, files)
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(t, err, "NOTICE lists %s", name)
		head := string(b[:min(len(b), 1200)])
		assert.True(t, strings.HasPrefix(head, "/*\nCopyright 2022 The Koordinator Authors.\n"), "%s starts with Koordinator's copyright", name)
		assert.Contains(t, head, "Licensed under the Apache License, Version 2.0", name)
		assert.Contains(t, head, "Derived from Koordinator v1.8.0", name)
	}
}
