package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver of the lock-set workload's SQL store

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/fence/sqlfence"
)

// SQLStore is the lock-set workload's set kept in PostgreSQL instead of
// `seqd store`: one row per key in Table, behind sqlfence's fence table
// FenceTable when Fenced, written without any fence otherwise (the
// negative control).
type SQLStore struct {
	DSN        string `json:"dsn"` // pgx's URL
	Table      string `json:"table"`
	FenceTable string `json:"fence_table"`
	Fenced     bool   `json:"fenced"`
}

// sqlStore is a client's connection to an SQLStore.
type sqlStore struct {
	cfg SQLStore
	db  *sql.DB
	f   *sqlfence.Fence
}

func openSQLStore(cfg SQLStore) (*sqlStore, error) {
	db, err := sql.Open("pgx", cfg.DSN)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	f, err := sqlfence.New(db, sqlfence.Postgres, sqlfence.Options{Table: cfg.FenceTable})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &sqlStore{cfg: cfg, db: db, f: f}, nil
}

// CreateSQLStore makes the tables of cfg.
func CreateSQLStore(ctx context.Context, cfg SQLStore) error {
	s, err := openSQLStore(cfg)
	if err != nil {
		return err
	}
	defer s.db.Close()
	if _, err := s.db.ExecContext(ctx, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (k text PRIMARY KEY, v text NOT NULL)", cfg.Table)); err != nil {
		return err
	}
	return s.f.Create(ctx)
}

// tx runs fn in a transaction, behind the fence unless the store is the
// unfenced control.
func (s *sqlStore) tx(ctx context.Context, key string, token uint64, fn func(*sql.Tx) error) error {
	if s.cfg.Fenced {
		return s.f.Do(ctx, key, token, fn)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) read(ctx context.Context, key string, token uint64) ([]int, error) {
	var v sql.NullString
	err := s.tx(ctx, key, token, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, fmt.Sprintf("SELECT v FROM %s WHERE k = $1", s.cfg.Table), key).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	set := []int{}
	if v.Valid {
		if err := json.Unmarshal([]byte(v.String), &set); err != nil {
			return nil, fmt.Errorf("undecodable value: %w", err)
		}
	}
	return set, nil
}

func (s *sqlStore) write(ctx context.Context, key string, token uint64, set []int) error {
	b, _ := json.Marshal(set)
	return s.tx(ctx, key, token, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", s.cfg.Table), key, string(b))
		return err
	})
}

// sqlResult maps an SQL store's error to a result: the fence's refusal is
// definite, and so is a transaction that could not begin because no
// connection could be made (the server down or starting); any other
// failure (the server killed mid-transaction, a connection cut at commit)
// may have come after the commit, so it is unknown.
func sqlResult(err error) (string, string) {
	switch {
	case err == nil:
		return ResultOK, ""
	case errors.Is(err, fence.ErrStaleToken):
		return ResultStale, err.Error()
	case strings.Contains(err.Error(), "failed to connect to"): // pgx, making the connection a transaction would begin on
		return ResultFail, err.Error()
	}
	return ResultInfo, err.Error()
}
