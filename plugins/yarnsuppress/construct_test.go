package yarnsuppress

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	qmframework "github.com/koordinator-sh/koordinator/pkg/koordlet/qosmanager/framework"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// mustFactory is NewFactory, failing the test on an error.
func mustFactory(t testing.TB, deps Deps) qmframework.QOSStrategyFactory {
	t.Helper()
	f, err := NewFactory(deps)
	require.NoError(t, err)
	return f
}

// mustRestorer is NewRestorer with a writer of the test's own (a fresh
// process: it restores from the record alone).
func mustRestorer(t testing.TB, hierarchy func() string) *Restorer {
	t.Helper()
	r, err := NewRestorer(hierarchy, cgroups.NewRootQuota())
	require.NoError(t, err)
	return r
}

// TestTheOneWriterIsRequired: BE suppress and its restorer are built only
// on the one writer of the YARN root's quota.
func TestTheOneWriterIsRequired(t *testing.T) {
	_, err := NewFactory(Deps{Hierarchy: func() string { return "" }})
	assert.ErrorIs(t, err, ErrNoQuotaWriter)
	_, err = NewRestorer(func() string { return "" }, nil)
	assert.ErrorIs(t, err, ErrNoQuotaWriter)
}
