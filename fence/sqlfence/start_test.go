package sqlfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/seqd/seqd/fence/sqlfence"
	"github.com/seqd/seqd/testenv"
)

// TestCreateRefusesFoldingKeyColumn: a MariaDB fence table made earlier
// with the server's default collation (which folds case, trailing spaces
// and accents) is refused by Create with the ALTER TABLE that migrates it;
// once that statement has run, Create takes the table, and orders/A and
// orders/a keep separate maxes.
func TestCreateRefusesFoldingKeyColumn(t *testing.T) {
	s := open(t, testenv.MariaDB)
	ctx := context.Background()
	table := tableName(t, "f")
	s.exec(t, "DROP TABLE IF EXISTS "+table)
	s.exec(t, "CREATE TABLE "+table+" (fence_key varchar(255) NOT NULL PRIMARY KEY, max_token bigint unsigned NOT NULL) ENGINE=InnoDB")
	f, err := sqlfence.New(s.db, sqlfence.MySQL, sqlfence.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	err = f.Create(ctx)
	if !errors.Is(err, sqlfence.ErrKeyCollation) {
		t.Fatalf("Create on a folding key column: %v, want ErrKeyCollation", err)
	}
	_, alter, ok := strings.Cut(err.Error(), "migrate it with: ")
	if !ok || !strings.HasPrefix(alter, "ALTER TABLE "+table+" ") {
		t.Fatalf("the refusal gives no ALTER TABLE: %v", err)
	}
	s.exec(t, alter)
	if err := f.Create(ctx); err != nil {
		t.Fatalf("Create after the migration: %v", err)
	}
	for _, c := range []struct {
		key string
		tok uint64
	}{{"orders/A", 900}, {"orders/a", 5}, {"orders/a ", 6}} {
		if err := f.Do(ctx, c.key, c.tok, nil); err != nil {
			t.Fatalf("%q with %d: %v", c.key, c.tok, err)
		}
		if max, err := f.Max(ctx, c.key); err != nil || max != c.tok {
			t.Errorf("max of %q: %d (%v), want %d", c.key, max, err, c.tok)
		}
	}
}
