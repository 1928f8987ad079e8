package testenv

import "testing"

// TestRedisInfoField: a field is read by its whole line, so Redis 7's
// async_loading does not stand in for loading.
func TestRedisInfoField(t *testing.T) {
	info := "# Persistence\r\nloading:1\r\nasync_loading:0\r\naof_enabled:1\r\n"
	for _, c := range []struct {
		field, want string
		ok          bool
	}{
		{"loading", "1", true},
		{"async_loading", "0", true},
		{"aof_enabled", "1", true},
		{"rdb_changes_since_last_save", "", false},
	} {
		if got, ok := redisInfoField(info, c.field); got != c.want || ok != c.ok {
			t.Errorf("redisInfoField(%q) = %q, %v; want %q, %v", c.field, got, ok, c.want, c.ok)
		}
	}
}
