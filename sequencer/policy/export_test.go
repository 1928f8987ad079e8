package policy

// GlobMatches reports whether the policy glob pat matches s.
func GlobMatches(pat, s string) bool {
	g, err := parseGlob("pattern", pat)
	return err == nil && g.match(s)
}
