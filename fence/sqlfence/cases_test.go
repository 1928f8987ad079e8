package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/fence/internal/dbcases"
	"github.com/seqd/seqd/fence/sqlfence"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/dbtest"
)

var (
	pg      = dbtest.Lazy{Options: testenv.DBOptions{Kind: testenv.Postgres}}
	mariadb = dbtest.Lazy{Options: testenv.DBOptions{Kind: testenv.MariaDB}}
)

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Close()
	mariadb.Close()
	os.Exit(code)
}

// server is one database server with a pool on it.
type server struct {
	d       *testenv.DB
	db      *sql.DB
	dialect sqlfence.Dialect
}

func open(t *testing.T, kind string) *server {
	t.Helper()
	s := &server{}
	switch kind {
	case testenv.Postgres:
		s.d, s.dialect = pg.Get(t), sqlfence.Postgres
		db, err := sql.Open("pgx", s.d.DSN())
		if err != nil {
			t.Fatal(err)
		}
		s.db = db
	default:
		s.d, s.dialect = mariadb.Get(t), sqlfence.MySQL
		db, err := sql.Open("mysql", s.d.DSN())
		if err != nil {
			t.Fatal(err)
		}
		s.db = db
	}
	s.db.SetMaxOpenConns(16)
	t.Cleanup(func() { s.db.Close() })
	return s
}

// ph is the n-th placeholder.
func (s *server) ph(n int) string {
	if s.dialect == sqlfence.Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

func (s *server) exec(t *testing.T, q string) {
	t.Helper()
	if _, err := s.db.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// restart kills the server, starts it again and waits until the pool has
// a working connection.
func (s *server) restart(ctx context.Context) error {
	s.d.Kill()
	if err := s.d.Restart(ctx); err != nil {
		return err
	}
	s.db.SetMaxIdleConns(0)
	s.db.SetMaxIdleConns(2)
	for {
		err := s.db.PingContext(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no connection after the restart: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var notIdent = regexp.MustCompile(`[^a-z0-9_]`)

// tableName is a fresh table name for a case.
func tableName(t *testing.T, prefix string) string {
	n := prefix + "_" + notIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(n) > 60 {
		n = fmt.Sprintf("%s_%x", n[:40], len(n)) + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	}
	return n
}

// fenced is the fence on a server with a values table beside it; with a
// column recipe the values and the token are one row.
type fenced struct {
	s      *server
	f      *sqlfence.Fence
	values string // table (k, v)
	column bool
}

func (s *server) valueType() string {
	if s.dialect == sqlfence.Postgres {
		return "text"
	}
	return "varchar(255)"
}

// keyType is the type of the harness tables' keys: on MariaDB a binary
// string, so that keys apart by case, spaces or accents stay apart.
func (s *server) keyType() string {
	if s.dialect == sqlfence.Postgres {
		return "text"
	}
	return "varbinary(1024)"
}

func newFenced(t *testing.T, s *server, column bool, iso sql.IsolationLevel) *fenced {
	fc := &fenced{s: s, column: column}
	fc.values = tableName(t, "v")
	opts := sqlfence.Options{TxOptions: &sql.TxOptions{Isolation: iso}}
	s.exec(t, "DROP TABLE IF EXISTS "+fc.values)
	if column {
		tokType := "numeric(20,0)"
		if s.dialect == sqlfence.MySQL {
			tokType = "bigint unsigned"
		}
		s.exec(t, fmt.Sprintf("CREATE TABLE %s (k %s PRIMARY KEY, v %s NULL, fence_token %s NULL)", fc.values, s.keyType(), s.valueType(), tokType))
		opts.Table, opts.KeyColumn, opts.TokenColumn = fc.values, "k", "fence_token"
	} else {
		s.exec(t, fmt.Sprintf("CREATE TABLE %s (k %s PRIMARY KEY, v %s NULL)", fc.values, s.keyType(), s.valueType()))
		opts.Table = tableName(t, "f")
		s.exec(t, "DROP TABLE IF EXISTS "+opts.Table)
	}
	f, err := sqlfence.New(s.db, s.dialect, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Create(context.Background()); err != nil {
		t.Fatal(err)
	}
	fc.f = f
	return fc
}

func (fc *fenced) put(ctx context.Context, tx *sql.Tx, key, value string) error {
	s := fc.s
	var q string
	switch {
	case fc.column:
		q = fmt.Sprintf("UPDATE %s SET v = %s WHERE k = %s", fc.values, s.ph(1), s.ph(2))
		_, err := tx.ExecContext(ctx, q, value, key)
		return err
	case s.dialect == sqlfence.Postgres:
		q = fmt.Sprintf("INSERT INTO %s (k, v) VALUES ($2, $1) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", fc.values)
	default:
		q = fmt.Sprintf("INSERT INTO %s (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)", fc.values)
		_, err := tx.ExecContext(ctx, q, key, value)
		return err
	}
	_, err := tx.ExecContext(ctx, q, value, key)
	return err
}

func getValue(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, s *server, table, key string) (*string, error) {
	var v sql.NullString
	err := q.QueryRowContext(ctx, fmt.Sprintf("SELECT v FROM %s WHERE k = %s", table, s.ph(1)), key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !v.Valid {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &v.String, nil
}

func (fc *fenced) Write(ctx context.Context, key, token, value string) error {
	n, err := fence.ParseToken(token)
	if err != nil {
		return err
	}
	return fc.f.Do(ctx, key, n, func(tx *sql.Tx) error { return fc.put(ctx, tx, key, value) })
}

func (fc *fenced) Read(ctx context.Context, key, token string) (*string, error) {
	n, err := fence.ParseToken(token)
	if err != nil {
		return nil, err
	}
	var v *string
	err = fc.f.Do(ctx, key, n, func(tx *sql.Tx) error {
		var err error
		v, err = getValue(ctx, tx, fc.s, fc.values, key)
		return err
	})
	return v, err
}

func (fc *fenced) Delete(ctx context.Context, key, token string) error {
	n, err := fence.ParseToken(token)
	if err != nil {
		return err
	}
	err = fc.f.Do(ctx, key, n, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE k = %s", fc.values, fc.s.ph(1)), key)
		return err
	})
	if err != nil && strings.Contains(err.Error(), sqlfence.KeepRowMessage) {
		return fmt.Errorf("%w: %v", dbcases.ErrRowKept, err)
	}
	return err
}

func (fc *fenced) Value(ctx context.Context, key string) (*string, error) {
	return getValue(ctx, fc.s.db, fc.s, fc.values, key)
}

func (fc *fenced) Max(ctx context.Context, key string) (uint64, error) { return fc.f.Max(ctx, key) }

func (fc *fenced) Restart(ctx context.Context) error { return fc.s.restart(ctx) }

// control is a values table written without a fence (none), or behind a
// max kept in a column of the wrong type: text compared as text (string)
// or a double (double).
type control struct {
	s      *server
	kind   string
	values string
}

func newControl(t *testing.T, s *server, kind string) *control {
	c := &control{s: s, kind: kind, values: tableName(t, "c"+kind)}
	s.exec(t, "DROP TABLE IF EXISTS "+c.values)
	maxType := map[string]string{"none": s.valueType(), "string": s.valueType(), "double": "double precision"}[kind]
	s.exec(t, fmt.Sprintf("CREATE TABLE %s (k %s PRIMARY KEY, v %s NULL, m %s NULL)", c.values, s.keyType(), s.valueType(), maxType))
	return c
}

func (c *control) write(ctx context.Context, key, token string, value *string) error {
	for {
		err := c.writeOnce(ctx, key, token, value)
		if !sqlfence.Retryable(err) || ctx.Err() != nil {
			return err
		}
	}
}

func (c *control) writeOnce(ctx context.Context, key, token string, value *string) error {
	s := c.s
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if c.kind != "none" {
		// The row first, so that a racing writer of a new key waits
		// for its lock too.
		ins := fmt.Sprintf("INSERT INTO %s (k) VALUES ($1) ON CONFLICT (k) DO NOTHING", c.values)
		if s.dialect == sqlfence.MySQL {
			ins = fmt.Sprintf("INSERT IGNORE INTO %s (k) VALUES (?)", c.values)
		}
		if _, err := tx.ExecContext(ctx, ins, key); err != nil {
			return err
		}
		var m sql.NullString
		err := tx.QueryRowContext(ctx, fmt.Sprintf("SELECT m FROM %s WHERE k = %s FOR UPDATE", c.values, s.ph(1)), key).Scan(&m)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if m.Valid {
			cmp := fmt.Sprintf("SELECT %s < m FROM %s WHERE k = %s", s.ph(1), c.values, s.ph(2))
			if c.kind == "double" {
				cmp = fmt.Sprintf("SELECT CAST(%s::text AS double precision) < m FROM %s WHERE k = %s", s.ph(1), c.values, s.ph(2))
				if s.dialect == sqlfence.MySQL {
					cmp = fmt.Sprintf("SELECT CAST(%s AS double) < m FROM %s WHERE k = %s", s.ph(1), c.values, s.ph(2))
				}
			}
			var below bool
			if err := tx.QueryRowContext(ctx, cmp, token, key).Scan(&below); err != nil {
				return err
			}
			if below {
				return fence.ErrStaleToken
			}
		}
	}
	var q string
	if s.dialect == sqlfence.Postgres {
		q = fmt.Sprintf("INSERT INTO %s (k, v, m) VALUES ($1, $2, $3) ON CONFLICT (k) DO UPDATE SET m = EXCLUDED.m", c.values)
		if value != nil {
			q += ", v = EXCLUDED.v"
		}
	} else {
		q = fmt.Sprintf("INSERT INTO %s (k, v, m) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE m = VALUES(m)", c.values)
		if value != nil {
			q += ", v = VALUES(v)"
		}
	}
	var m any = token
	if c.kind == "double" {
		d, err := strconv.ParseFloat(token, 64)
		if err != nil {
			return fence.ErrInvalidSequencer
		}
		m = d
	}
	if _, err := tx.ExecContext(ctx, q, key, value, m); err != nil {
		return err
	}
	return tx.Commit()
}

func (c *control) Write(ctx context.Context, key, token, value string) error {
	return c.write(ctx, key, token, &value)
}

func (c *control) Read(ctx context.Context, key, token string) (*string, error) {
	if err := c.write(ctx, key, token, nil); err != nil {
		return nil, err
	}
	return c.Value(ctx, key)
}

// Delete is a write of the token (the control's check, if any) and then
// a delete of the row, max and all: what the column recipe did before
// its rows were kept.
func (c *control) Delete(ctx context.Context, key, token string) error {
	if err := c.write(ctx, key, token, nil); err != nil {
		return err
	}
	_, err := c.s.db.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE k = %s", c.values, c.s.ph(1)), key)
	return err
}

func (c *control) Value(ctx context.Context, key string) (*string, error) {
	return getValue(ctx, c.s.db, c.s, c.values, key)
}

func (c *control) Max(context.Context, string) (uint64, error) { return 0, nil }

func (c *control) Restart(ctx context.Context) error { return c.s.restart(ctx) }

// TestSharedCases runs the shared cases on PostgreSQL and MariaDB, with the
// fence table at READ COMMITTED and REPEATABLE READ and with the column
// recipe, and the controls (no fence, a text max, a double max) that must
// fail the cases that say so.
func TestSharedCases(t *testing.T) {
	for _, kind := range []string{testenv.Postgres, testenv.MariaDB} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			s := open(t, kind)
			for _, r := range []struct {
				name     string
				column   bool
				iso      sql.IsolationLevel
				controls []string
			}{
				{"table/read-committed", false, sql.LevelReadCommitted, []string{"none", "string", "double"}},
				{"table/repeatable-read", false, sql.LevelRepeatableRead, []string{"none"}},
				{"column/read-committed", true, sql.LevelReadCommitted, nil},
				{"column/repeatable-read", true, sql.LevelRepeatableRead, nil},
			} {
				t.Run(r.name, func(t *testing.T) {
					controls := r.controls
					if controls == nil {
						controls = []string{"none"}
					}
					dbcases.Run(t, dbcases.Suite{
						Durable:  true,
						Controls: controls,
						New: func(t *testing.T, c dbcases.Case, ctl string) dbcases.Target {
							if ctl != "" {
								return newControl(t, s, ctl)
							}
							return newFenced(t, s, r.column, r.iso)
						},
					})
				})
			}
		})
	}
}

// TestDoSequencer runs the shared signed-sequencer vectors through
// DoSequencer on PostgreSQL: an accepted sequencer's token fences the key
// (the max is its token) and every refused one leaves the key unfenced and
// the transaction unrun.
func TestDoSequencer(t *testing.T) {
	s := open(t, testenv.Postgres)
	seqs := dbcases.LoadSequencers(t)
	v := seqs.Verifier(t)
	fc := newFenced(t, s, false, sql.LevelReadCommitted)
	ctx := context.Background()
	for i, vec := range seqs.Vectors {
		key := fmt.Sprintf("vec%d", i)
		ran := false
		err := fc.f.DoSequencer(ctx, key, vec.Accept(t, v), vec.Sequencer, func(tx *sql.Tx) error {
			ran = true
			return fc.put(ctx, tx, key, "v")
		})
		if got := dbcases.SequencerOutcome(err); got != vec.Want() {
			t.Errorf("vector %d %.40q: %s, want %s", i, vec.Sequencer, got, vec.Want())
			continue
		}
		max, err := fc.f.Max(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(0)
		if vec.Expect == "ok" {
			want, _ = strconv.ParseUint(vec.Token, 10, 64)
		}
		if max != want || ran != (vec.Expect == "ok") {
			t.Errorf("vector %d (%s): max %d, ran %v; want max %d", i, vec.Expect, max, ran, want)
		}
	}
}
