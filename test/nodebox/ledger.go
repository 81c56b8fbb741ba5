package nodebox

import (
	"encoding/json"
	"fmt"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
)

// Ledger fetches koordlet's /yarn/ledger.
func (b *Box) Ledger() (koordletyarn.LedgerResponse, error) {
	var out koordletyarn.LedgerResponse
	body, err := b.get(koordletyarn.LedgerPath)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return out, fmt.Errorf("decode %s: %w", koordletyarn.LedgerPath, err)
	}
	return out, nil
}
