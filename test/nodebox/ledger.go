package nodebox

import (
	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
)

// Ledger fetches koordlet's /yarn/ledger.
func (b *Box) Ledger() (koordletyarn.LedgerResponse, error) {
	return getJSON[koordletyarn.LedgerResponse](b, koordletyarn.LedgerPath)
}
