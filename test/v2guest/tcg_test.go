package v2guest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSafeTCGThread(t *testing.T) {
	tests := []struct {
		name, version string
		err           error
		want          string
	}{
		{"bookworm's 7.2 livelocked", "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\nCopyright (c) 2003-2022 Fabrice Bellard\n", nil, "single"},
		{"backports' 10.0", "QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)\nCopyright\n", nil, "multi"},
		{"later", "QEMU emulator version 11.1.0\n", nil, "multi"},
		{"9.2 not proven", "QEMU emulator version 9.2.4\n", nil, "single"},
		{"no version", "something else\n", nil, "single"},
		{"garbled number", "QEMU emulator version x.y\n", nil, "single"},
		{"qemu missing", "", errors.New("exec: not found"), "single"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := safeTCGThread(tt.version, tt.err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want == "single", why != "", "a reason is given exactly when not multi: %q", why)
		})
	}
}
