package zklock

import (
	"strings"
	"testing"
)

// A name with a character outside the allowed set names that character,
// not the Latin-1 letter its first byte would be alone ("Ã" for "ü").
func TestNameErrorNamesTheCharacter(t *testing.T) {
	err := ValidateName("jobs/müller")
	if err == nil || !strings.Contains(err.Error(), "'ü'") || strings.Contains(err.Error(), "Ã") {
		t.Fatalf("ValidateName(jobs/müller) = %v, want it to name 'ü'", err)
	}
	err = ValidateName("jobs/\xffx")
	if err == nil || !strings.Contains(err.Error(), "'\uFFFD'") {
		t.Fatalf("an invalid byte: %v, want the replacement character named", err)
	}
}
