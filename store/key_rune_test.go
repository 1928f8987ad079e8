package store

import (
	"strings"
	"testing"
)

// A key with a character outside the allowed set names that character.
func TestKeyErrorNamesTheCharacter(t *testing.T) {
	err := ValidateKey("orders/ümlaut")
	if err == nil || !strings.Contains(err.Error(), "'ü'") || strings.Contains(err.Error(), "Ã") {
		t.Fatalf("ValidateKey = %v, want it to name 'ü'", err)
	}
}
