// Package sqlfence fences a PostgreSQL or MariaDB/MySQL database with seqd's
// tokens, over database/sql and whatever driver the caller uses (tested with
// pgx's stdlib and go-sql-driver/mysql).
//
// A Fence runs a fenced transaction: Do opens a transaction, raises the
// key's max to the token in one statement (an upsert that updates only when
// the stored max is not above the token) or refuses, and then runs the
// caller's statements in the same transaction, which holds the max's row
// until it commits. A holder that lost its lock and wakes up is refused as
// soon as a newer holder's transaction has committed, or waits for it and
// is then refused. Where the max lives is the recipe:
//
//   - fence table (the default): seqd_fence(fence_key PRIMARY KEY,
//     max_token), one row per key, beside the caller's data;
//   - column: a token column in the caller's own row (Options.Table,
//     KeyColumn, TokenColumn), so that the max and the data it guards are
//     one row.
//
// With the column recipe a deleted row would take its max with it, and the
// old holder's next write would recreate the row with its stale token;
// Create therefore puts a trigger on the table that refuses to delete (on
// PostgreSQL, to truncate) a row whose token column is set, with a sentence
// that points to the fence table. Keep such rows as tombstones (clear their
// data), or use the fence table for keys whose rows come and go.
//
// On MariaDB the fence table's key column is varbinary: keys compare byte
// for byte, so orders/A, orders/a and orders/a with a trailing space are
// three keys. Create refuses a fence table made earlier whose key column
// folds them (a case- or accent-insensitive or PAD SPACE collation), and
// says which ALTER TABLE migrates it.
//
// Admit runs inside the caller's *sql.Tx, a transaction by construction;
// the Python, Java and JavaScript helpers, which take a connection, refuse
// one in autocommit.
//
// Tokens are compared as integers over the whole uint64 range: numeric(20,0)
// with a CHECK of 1..2^64-1 on PostgreSQL, BIGINT UNSIGNED on MariaDB;
// tokens travel as decimal text, never as a float or a signed int64.
//
// Both recipes are correct at READ COMMITTED and REPEATABLE READ. At READ
// COMMITTED, an upsert or a locking read that waits for another
// transaction's fence row re-reads the row once that one commits. At
// REPEATABLE READ (and SERIALIZABLE) PostgreSQL instead aborts the later
// transaction with a serialization failure (SQLSTATE 40001), and InnoDB
// can report a deadlock (also 40001); Do runs the transaction again (up
// to Options.Retries times), so the function passed to it must be safe to
// run more than once (each run is a fresh transaction; the failed one was
// rolled back). SERIALIZABLE adds nothing to the fence's safety and aborts
// more often: transactions that read what a concurrent one wrote fail
// with 40001 even on different fence keys.
//
// Reads are fenced the same way: a read inside Do raises the max too, so
// that the old holder's delayed write cannot land between the new holder's
// read and its write.
//
// sqlfence imports database/sql and package fence only.
package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/seqd/seqd/fence"
)

// Dialect is the SQL a database speaks.
type Dialect int

// The dialects.
const (
	// Postgres is PostgreSQL (tested with 15).
	Postgres Dialect = iota + 1
	// MySQL is MariaDB (tested with 10.11) and MySQL.
	MySQL
)

func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "PostgreSQL"
	case MySQL:
		return "MariaDB/MySQL"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// ErrKeyCollation: a MariaDB fence table's key column folds keys that
// differ (case, trailing spaces, accents) into one max.
var ErrKeyCollation = errors.New("sqlfence: the fence table's key column folds distinct keys together")

// KeepRowMessage starts the error of the trigger that refuses to delete a
// row holding its fence max (the column recipe).
const KeepRowMessage = "seqd fence: this row keeps its fence max"

// MaxTokenSQL is the largest token, 2^64-1, as SQL.
const MaxTokenSQL = "18446744073709551615"

// DefaultTable is the fence table's name.
const DefaultTable = "seqd_fence"

// DefaultRetries is how many times Do runs a transaction again after a
// serialization failure or a deadlock.
const DefaultRetries = 10

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

func checkIdent(what, s string) error {
	if !identifier.MatchString(s) {
		return fmt.Errorf("sqlfence: %s %q is not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63 bytes)", what, s)
	}
	return nil
}

// Options names where a Fence keeps its maxes.
type Options struct {
	// Table is the table ("" for DefaultTable, the fence table).
	Table string
	// KeyColumn is its primary key column ("" for fence_key), TokenColumn
	// the column of the max ("" for max_token); naming either chooses the
	// column recipe. For the column recipe,
	// name the caller's own table, its primary key and a token column
	// (numeric(20,0) on PostgreSQL, bigint unsigned on MariaDB, NULL
	// allowed for rows never fenced): Admit then creates a missing row
	// with only its key and token, so the table's other columns need
	// defaults (or the row must exist).
	KeyColumn, TokenColumn string
	// Retries is how many times Do runs a transaction again after a
	// serialization failure or deadlock; 0 for DefaultRetries, -1 for
	// none.
	Retries int
	// TxOptions are the options of Do's transactions (the isolation
	// level); nil is the database's default (READ COMMITTED on
	// PostgreSQL, REPEATABLE READ on MariaDB).
	TxOptions *sql.TxOptions
}

// Fence keeps the maxes of keys in one table of one database.
type Fence struct {
	db      *sql.DB
	dialect Dialect
	opts    Options

	upsert, max string
}

// New returns a fence on db. It does no I/O: Create makes the fence table.
func New(db *sql.DB, d Dialect, opts Options) (*Fence, error) {
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if opts.KeyColumn == "" {
		opts.KeyColumn = "fence_key"
	}
	if opts.TokenColumn == "" {
		opts.TokenColumn = "max_token"
	}
	switch {
	case opts.Retries == 0:
		opts.Retries = DefaultRetries
	case opts.Retries < 0:
		opts.Retries = 0
	}
	for what, v := range map[string]string{"table name": opts.Table, "key column": opts.KeyColumn, "token column": opts.TokenColumn} {
		if err := checkIdent(what, v); err != nil {
			return nil, err
		}
	}
	f := &Fence{db: db, dialect: d, opts: opts}
	name, k, tok := opts.Table, opts.KeyColumn, opts.TokenColumn
	switch d {
	case Postgres:
		// The WHERE of DO UPDATE is evaluated on the row's latest
		// version once its lock is had: a max raised by a transaction
		// that committed while this one waited is seen.
		f.upsert = `INSERT INTO ` + name + ` (` + k + `, ` + tok + `) VALUES ($1, $2::numeric)
ON CONFLICT (` + k + `) DO UPDATE SET ` + tok + ` = EXCLUDED.` + tok + `
WHERE ` + name + `.` + tok + ` IS NULL OR ` + name + `.` + tok + ` <= EXCLUDED.` + tok + `
RETURNING ` + tok + `::text`
		f.max = `SELECT ` + tok + `::text FROM ` + name + ` WHERE ` + k + ` = $1`
	case MySQL:
		// ON DUPLICATE KEY UPDATE locks the row whether it changes it or
		// not; the locking read after it sees the latest version (not the
		// transaction's snapshot) and tells raised from refused.
		f.upsert = `INSERT INTO ` + name + ` (` + k + `, ` + tok + `) VALUES (?, CAST(? AS UNSIGNED))
ON DUPLICATE KEY UPDATE ` + tok + ` = IF(` + tok + ` IS NULL OR ` + tok + ` <= VALUES(` + tok + `), VALUES(` + tok + `), ` + tok + `)`
		f.max = `SELECT CAST(` + tok + ` AS CHAR) FROM ` + name + ` WHERE ` + k + ` = ?`
	default:
		return nil, fmt.Errorf("sqlfence: unknown dialect %d", int(d))
	}
	return f, nil
}

// CreateSQL is the statement that makes the fence table (Options.Table
// with its key and token columns and nothing else).
func (f *Fence) CreateSQL() string {
	name, k, tok := f.opts.Table, f.opts.KeyColumn, f.opts.TokenColumn
	if f.dialect == Postgres {
		return `CREATE TABLE IF NOT EXISTS ` + name + ` (
  ` + k + ` text PRIMARY KEY,
  ` + tok + ` numeric(20,0) NOT NULL CHECK (` + tok + ` >= 1 AND ` + tok + ` <= ` + MaxTokenSQL + `)
)`
	}
	return `CREATE TABLE IF NOT EXISTS ` + name + ` (
  ` + k + ` varbinary(1024) NOT NULL PRIMARY KEY,
  ` + tok + ` bigint unsigned NOT NULL CHECK (` + tok + ` >= 1)
) ENGINE=InnoDB`
}

// Column says whether the fence keeps its maxes in the caller's own rows:
// the column recipe, chosen by naming a key or token column other than
// the fence table's.
func (f *Fence) Column() bool {
	return f.opts.KeyColumn != "fence_key" || f.opts.TokenColumn != "max_token"
}

// KeepRowsSQL are the statements that put on the column recipe's table the
// trigger that refuses to delete a row whose token column is set.
func (f *Fence) KeepRowsSQL() []string {
	name, tok := f.opts.Table, f.opts.TokenColumn
	msg := KeepRowMessage + `: deleting it would let a stale holder recreate it; keep the row or use the fence table`
	if f.dialect == Postgres {
		return []string{`CREATE OR REPLACE FUNCTION seqd_fence_keep_row() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF TG_LEVEL = 'STATEMENT' OR to_jsonb(OLD) ->> TG_ARGV[0] IS NOT NULL THEN
    RAISE EXCEPTION '` + msg + ` (%.%)', TG_TABLE_NAME, TG_ARGV[0] USING ERRCODE = 'restrict_violation';
  END IF;
  RETURN OLD;
END $f$`,
			`CREATE OR REPLACE TRIGGER seqd_fence_keep_row BEFORE DELETE ON ` + name + ` FOR EACH ROW EXECUTE FUNCTION seqd_fence_keep_row('` + tok + `')`,
			`CREATE OR REPLACE TRIGGER seqd_fence_keep_rows BEFORE TRUNCATE ON ` + name + ` FOR EACH STATEMENT EXECUTE FUNCTION seqd_fence_keep_row('` + tok + `')`,
		}
	}
	trigger := "seqd_keep_" + name
	if len(trigger) > 64 {
		trigger = trigger[:64]
	}
	// MariaDB's MESSAGE_TEXT holds 128 characters at most.
	return []string{`CREATE TRIGGER IF NOT EXISTS ` + trigger + ` BEFORE DELETE ON ` + name + ` FOR EACH ROW
IF OLD.` + tok + ` IS NOT NULL THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '` + KeepRowMessage + `; keep the row or use the fence table'; END IF`}
}

// Create makes the fence table if it does not exist, and checks on
// MariaDB that an existing one compares keys byte for byte
// (ErrKeyCollation, with the ALTER TABLE that migrates it). For the column
// recipe it makes no table: it puts the trigger of KeepRowsSQL on the
// caller's.
func (f *Fence) Create(ctx context.Context) error {
	if f.Column() {
		for _, q := range f.KeepRowsSQL() {
			if _, err := f.db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("sqlfence: the trigger that keeps %s's rows: %w", f.opts.Table, err)
			}
		}
		return nil
	}
	if _, err := f.db.ExecContext(ctx, f.CreateSQL()); err != nil {
		return fmt.Errorf("sqlfence: create %s: %w", f.opts.Table, err)
	}
	if f.dialect == MySQL {
		return f.checkKeyColumn(ctx)
	}
	return nil
}

// checkKeyColumn refuses a key column whose collation folds keys: any but
// a binary string or a NO PAD binary collation.
func (f *Fence) checkKeyColumn(ctx context.Context) error {
	var typ string
	var coll sql.NullString
	err := f.db.QueryRowContext(ctx, `SELECT DATA_TYPE, COLLATION_NAME FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`, f.opts.Table, f.opts.KeyColumn).Scan(&typ, &coll)
	if err != nil {
		return fmt.Errorf("sqlfence: reading the collation of %s.%s: %w", f.opts.Table, f.opts.KeyColumn, err)
	}
	c := strings.ToLower(coll.String)
	if typ == "varbinary" || typ == "binary" || strings.HasSuffix(c, "_nopad_bin") || strings.HasSuffix(c, "_0900_bin") {
		return nil
	}
	return fmt.Errorf("%w: %s.%s is %s with collation %s, so keys that differ in case, trailing spaces or accents share one max; migrate it with: ALTER TABLE %s MODIFY %s varbinary(1024) NOT NULL",
		ErrKeyCollation, f.opts.Table, f.opts.KeyColumn, typ, coll.String, f.opts.Table, f.opts.KeyColumn)
}

// Do runs fn in a transaction fenced by key and token: the transaction
// first raises key's max to token, or, if the max is above token, is
// rolled back and Do returns a *fence.StaleTokenError. fn's statements run
// in the same transaction, which commits when fn returns nil and rolls
// back otherwise. On a serialization failure or deadlock the whole
// transaction, fn included, runs again (Options.Retries times at most).
func (f *Fence) Do(ctx context.Context, key string, token uint64, fn func(tx *sql.Tx) error) error {
	if token == 0 {
		return fmt.Errorf("sqlfence: %w", fence.ErrInvalidSequencer)
	}
	var err error
	for attempt := 0; attempt <= f.opts.Retries; attempt++ {
		err = f.once(ctx, key, token, fn)
		if !Retryable(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// DoSequencer is Do for a sequencer string, accepted by a (its signature,
// kind and name checked) before its token fences key.
func (f *Fence) DoSequencer(ctx context.Context, key string, a fence.Accept, seq string, fn func(tx *sql.Tx) error) error {
	s, err := a.Sequencer(seq)
	if err != nil {
		return err
	}
	return f.Do(ctx, key, s.Token, fn)
}

func (f *Fence) once(ctx context.Context, key string, token uint64, fn func(tx *sql.Tx) error) error {
	tx, err := f.db.BeginTx(ctx, f.opts.TxOptions)
	if err != nil {
		return fmt.Errorf("sqlfence: begin: %w", err)
	}
	if err := f.Admit(ctx, tx, key, token); err != nil {
		tx.Rollback()
		return err
	}
	if fn != nil {
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlfence: commit: %w", err)
	}
	return nil
}

// Admit raises key's max to token inside the caller's transaction tx, or
// returns a *fence.StaleTokenError (the caller then rolls back). The row
// stays locked until tx ends. Do is Admit with the transaction around it.
func (f *Fence) Admit(ctx context.Context, tx *sql.Tx, key string, token uint64) error {
	tok := strconv.FormatUint(token, 10)
	switch f.dialect {
	case Postgres:
		var got string
		err := tx.QueryRowContext(ctx, f.upsert, key, tok).Scan(&got)
		if errors.Is(err, sql.ErrNoRows) {
			return f.stale(ctx, tx, key, token)
		}
		if err != nil {
			return fmt.Errorf("sqlfence: fence %q: %w", key, err)
		}
		return nil
	default:
		if _, err := tx.ExecContext(ctx, f.upsert, key, tok); err != nil {
			return fmt.Errorf("sqlfence: fence %q: %w", key, err)
		}
		var got string
		if err := tx.QueryRowContext(ctx, f.max+" FOR UPDATE", key).Scan(&got); err != nil {
			return fmt.Errorf("sqlfence: fence %q: %w", key, err)
		}
		max, err := strconv.ParseUint(got, 10, 64)
		if err != nil {
			return fmt.Errorf("sqlfence: fence %q: max %q: %w", key, got, err)
		}
		if max > token {
			return &fence.StaleTokenError{Key: key, Token: token, Max: max}
		}
		return nil
	}
}

func (f *Fence) stale(ctx context.Context, tx *sql.Tx, key string, token uint64) error {
	var got string
	if err := tx.QueryRowContext(ctx, f.max, key).Scan(&got); err != nil {
		return fmt.Errorf("sqlfence: fence %q refused token %d, and its max cannot be read: %w", key, token, err)
	}
	max, _ := strconv.ParseUint(got, 10, 64)
	return &fence.StaleTokenError{Key: key, Token: token, Max: max}
}

// Max is key's stored max, 0 if the key was never fenced.
func (f *Fence) Max(ctx context.Context, key string) (uint64, error) {
	var got string
	err := f.db.QueryRowContext(ctx, f.max, key).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlfence: max of %q: %w", key, err)
	}
	return strconv.ParseUint(got, 10, 64)
}

// Retryable says whether err is a serialization failure or a deadlock
// (SQLSTATE 40001 or 40P01), after which the transaction can run again.
// It knows the errors of drivers that expose SQLState() string (pgx,
// lib/pq) and those that put the state in their message as "(40001)"
// (go-sql-driver/mysql).
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		s := st.SQLState()
		return s == "40001" || s == "40P01"
	}
	msg := err.Error()
	return strings.Contains(msg, "(40001)") || strings.Contains(msg, "Error 1213") || strings.Contains(msg, "Error 1205")
}
