package yarn

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseContainerIDValid(t *testing.T) {
	tests := []struct {
		in   string
		want ContainerID
		app  string
		am   bool
	}{
		{"container_e17_1700000000000_0042_01_000007", ContainerID{17, 1700000000000, 42, 1, 7}, "application_1700000000000_0042", false},
		{"container_1700000000000_0042_01_000001", ContainerID{0, 1700000000000, 42, 1, 1}, "application_1700000000000_0042", true},
		{"container_e100_1700000000000_12345_123_1234567", ContainerID{100, 1700000000000, 12345, 123, 1234567}, "application_1700000000000_12345", false},
		{"container_e05_1_0001_01_000001", ContainerID{5, 1, 1, 1, 1}, "application_1_0001", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			id, err := ParseContainerID(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, id)
			assert.Equal(t, tt.in, id.String())
			assert.Equal(t, tt.app, id.ApplicationID())
			assert.Equal(t, tt.am, id.IsApplicationMaster())
			again, err := ParseContainerID(id.String())
			require.NoError(t, err)
			assert.Equal(t, id, again)
			assert.True(t, IsCanonical(tt.in))
		})
	}
}

func TestParseContainerIDNonCanonical(t *testing.T) {
	// Leading zeros beyond the minimum width parse (Hadoop's own parser
	// accepts them) but are not canonical, so they never name a path.
	for _, s := range []string{
		"container_e00_1700000000000_0042_01_000007",
		"container_1700000000000_00042_01_000007",
		"container_01700000000000_0042_01_000007",
	} {
		id, err := ParseContainerID(s)
		require.NoError(t, err, s)
		assert.False(t, IsCanonical(s), s)
		again, err := ParseContainerID(id.String())
		require.NoError(t, err)
		assert.Equal(t, id, again)
	}
}

func TestParseContainerIDInvalid(t *testing.T) {
	for _, s := range []string{
		"",
		"container_",
		"container",
		"application_1700000000000_0042",
		"Container_1700000000000_0042_01_000007",
		"container_E17_1700000000000_0042_01_000007",
		"container_e7_1700000000000_0042_01_000007",     // epoch < 2 digits
		"container_1700000000000_042_01_000007",         // app < 4 digits
		"container_1700000000000_0042_1_000007",         // attempt < 2 digits
		"container_1700000000000_0042_01_00007",         // sequence < 6 digits
		"container_1700000000000_0042_01",               // too few fields
		"container_e17_1700000000000_0042_01_000007_1",  // too many fields
		"container_1700000000000_0042_01_000007_",       // trailing underscore
		"container_x1_1700000000000_0042_01_000007",     // not an epoch
		"container_1700000000000_0042_01_000007/../x",   // path
		"container_../../etc_0042_01_000007",            // path
		"container_1700000000000_0042_01_-00007",        // sign
		"container_1700000000000_0042_01_+000007",       // sign
		"container_1700000000000_0042_01_ 000007",       // space
		"container_1700000000000_0042_01_000007\n",      // newline
		"container_1700000000000_0042_01_٠٠٠٠٠٧",        // non-ASCII digits
		"container_99999999999999999999_0042_01_000007", // overflow
		"container__0042_01_000007",                     // empty field
	} {
		_, err := ParseContainerID(s)
		assert.ErrorIs(t, err, ErrInvalidContainerID, "%q", s)
		assert.False(t, IsCanonical(s), "%q", s)
	}
}

func FuzzParseContainerID(f *testing.F) {
	f.Add("container_e17_1700000000000_0042_01_000007")
	f.Add("container_1700000000000_0042_01_000001")
	f.Add("container_../x_0042_01_000001")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseContainerID(s)
		if err != nil {
			return
		}
		if strings.ContainsAny(s, "/.\x00 ") {
			t.Fatalf("accepted a path-like id %q", s)
		}
		again, err := ParseContainerID(id.String())
		if err != nil || again != id {
			t.Fatalf("round trip of %q: %v %v", s, again, err)
		}
	})
}
