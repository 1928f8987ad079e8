package clients_test

// The harness of the database fences of the Python, Java and JavaScript
// clients: a PostgreSQL, a MariaDB and a Redis (append-only file,
// appendfsync always) started by testenv, the shared cases
// (fence/testdata/dbcases.json), sequencers signed by the fence package,
// and a control server through which a suite kills a database with SIGKILL
// and starts it again. A suite's process gets, besides the caller's
// environment minus every SEQD_* variable:
//
//	SEQD_TEST_PG_{HOST,PORT,USER,PASSWORD,DATABASE,URL}       PostgreSQL 15
//	SEQD_TEST_MARIADB_{HOST,PORT,USER,PASSWORD,DATABASE,URL}  MariaDB 10.11
//	SEQD_TEST_REDIS_{HOST,PORT,USER,PASSWORD,DATABASE,URL}    Redis 7
//	SEQD_TEST_REDIS_CASES_{HOST,PORT,USER,PASSWORD,DATABASE,URL}
//	                         a Redis of the Redis cases' own (they change its settings)
//	SEQD_TEST_FENCE_CASES    the shared cases' file
//	SEQD_TEST_FENCE_REDIS_CASES  the Redis cases' file
//	SEQD_TEST_FENCE_UNGUARDED    their control: the script before its guards
//	SEQD_TEST_FENCE_SIGNED   sequencer vectors (signed.json, below)
//	SEQD_TEST_FENCE_CONTROL  the control server: POST /restart?db=postgres|mariadb|redis
//	                         answers 200 once the server serves again
//
// Each suite prints one line per case, database and mode:
//
//	FENCECASE <language> <database> <case> <mode> <pass|fail> [what failed]
//
// where the mode is a recipe (fence: the fence table; column: the token in
// the data's own row, on SQL) or a control (none: no fence; double: tokens
// compared as doubles). The Redis cases are reported as the database
// redis-cases, in the modes fence and unguarded. The test holds every case × database × recipe to
// "pass", and every case whose fails_under names a control to "fail" under
// it: the control seen failing. The table of all of them goes to the
// test's log.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/fence/redisfence"
	"github.com/seqd/seqd/fence/sqlfence"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/dbtest"
)

var (
	pgLazy    = dbtest.Lazy{Options: testenv.DBOptions{Kind: testenv.Postgres}}
	mariaLazy = dbtest.Lazy{Options: testenv.DBOptions{Kind: testenv.MariaDB}}
	redisLazy = dbtest.Lazy{Options: testenv.DBOptions{Kind: testenv.Redis, AppendOnly: true, AppendFsync: "always"}}
	// The Redis cases change the server's settings (an eviction policy,
	// maxmemory) and evict keys: they get a Redis of their own.
	redisCasesLazy = dbtest.Lazy{Options: testenv.DBOptions{Kind: testenv.Redis, AppendOnly: true}}
)

// fenceDatabases are the databases every suite runs its cases on, with the
// prefix of their variables.
var fenceDatabases = []struct{ name, prefix string }{
	{"postgres", "SEQD_TEST_PG"},
	{"mariadb", "SEQD_TEST_MARIADB"},
	{"redis", "SEQD_TEST_REDIS"},
}

const (
	casesFile      = "../fence/testdata/dbcases.json"
	redisCasesFile = "../fence/testdata/rediscases.json"
	unguardedFile  = "../fence/testdata/redis_unguarded.lua"
)

// caseColumn is a database as a suite reports a cases file's runs on it:
// the recipes every case must pass with, and the control a case that
// names it in fails_under must fail under.
type caseColumn struct {
	db      string
	recipes []string
	control string
}

// fenceColumns: the shared cases run with the fence table, and on SQL the
// token column in the data's own row as well; their control is no fence.
// The Redis cases run on a Redis of their own, their control the script
// before its guards.
var (
	fenceColumns = []caseColumn{{"postgres", []string{"fence", "column"}, "none"}, {"mariadb", []string{"fence", "column"}, "none"},
		{"redis", []string{"fence"}, "none"}}
	redisCaseColumns = []caseColumn{{"redis-cases", []string{"fence"}, "unguarded"}}
)

// fenceEnv starts (or reuses) the databases and a control server, writes
// the signed vectors, and returns the suite's variables.
func fenceEnv(t *testing.T) []string {
	t.Helper()
	dbs := map[string]*testenv.DB{
		"postgres": pgLazy.Get(t),
		"mariadb":  mariaLazy.Get(t),
		"redis":    redisLazy.Get(t),
	}
	vars := []string{
		"SEQD_TEST_FENCE_CASES=" + abs(t, casesFile),
		"SEQD_TEST_FENCE_REDIS_CASES=" + abs(t, redisCasesFile),
		"SEQD_TEST_FENCE_UNGUARDED=" + abs(t, unguardedFile),
		"SEQD_TEST_FENCE_SIGNED=" + writeSignedVectors(t, t.TempDir()),
		"SEQD_TEST_FENCE_CONTROL=" + serveDBControl(t, dbs),
	}
	for _, d := range fenceDatabases {
		vars = append(vars, dbs[d.name].Env(d.prefix)...)
	}
	vars = append(vars, redisCasesLazy.Get(t).Env("SEQD_TEST_REDIS_CASES")...)
	return vars
}

// serveDBControl serves /restart for the suites and returns its URL.
func serveDBControl(t *testing.T, dbs map[string]*testenv.DB) string {
	t.Helper()
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		d, ok := dbs[r.URL.Query().Get("db")]
		if !ok {
			http.Error(w, "want ?db=postgres|mariadb|redis", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		// Restart kills the server with SIGKILL first, as a crash would:
		// nothing gets to flush or shut down.
		if err := d.Restart(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"restarted":true}`)
	})
	return serve(t, mux)
}

// signedVector is one sequencer a suite hands to a guard: the lock (kind
// and name) the guard is for, whether it verifies signatures with the
// verify keys file, and what it must answer: ok (with token),
// invalid, unsigned, bad_signature or wrong_lock.
type signedVector struct {
	About     string `json:"about"`
	Sequencer string `json:"sequencer"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Verify    bool   `json:"verify"`
	Expect    string `json:"expect"`
	Token     string `json:"token,omitempty"`
}

// writeSignedVectors signs sequencers with the fence package's Signer (what
// `seqd serve --signing-key-file` does) and writes them, with a verify keys
// file holding two keys (a rotation), to dir/signed.json. Every expectation
// is first checked against the fence package's own Verifier.
func writeSignedVectors(t *testing.T, dir string) string {
	t.Helper()
	newSigner := func(kid string) (*fence.Signer, []byte) {
		sk, vk, err := fence.GenerateKey(kid)
		if err != nil {
			t.Fatal(err)
		}
		s, err := fence.ParseSigningKey(sk)
		if err != nil {
			t.Fatal(err)
		}
		return s, vk
	}
	k1, vk1 := newSigner("k1")
	k2, vk2 := newSigner("k2-rotated")
	impostor, _ := newSigner("k1") // the same key id, another key
	stranger, _ := newSigner("k9") // a key id the resource does not know
	keysFile := filepath.Join(dir, "verify.keys")
	if err := os.WriteFile(keysFile, append(append([]byte("# two keys: the old and the new\n"), vk1...), vk2...), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := func(name string, token uint64) fence.Sequencer { return fence.Sequencer{Name: name, Token: token} }
	signed := k1.Sign(lock("jobs/orders", 4711))
	tampered := strings.Replace(signed, "@4711.", "@4712.", 1)
	// The last character of an 86-character signature carries 4 unused
	// bits: setting one spells the same bytes another way.
	last := signed[len(signed)-1]
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	respelled := signed[:len(signed)-1] + string(alphabet[strings.IndexByte(alphabet, last)|1])
	if respelled == signed {
		respelled = signed[:len(signed)-1] + string(alphabet[strings.IndexByte(alphabet, last)|2])
	}
	vs := []signedVector{
		{About: "signed by the first key", Sequencer: signed, Kind: "lock", Name: "jobs/orders", Verify: true, Expect: "ok", Token: "4711"},
		{About: "signed by the rotated key, the largest token", Sequencer: k2.Sign(lock("jobs/orders", ^uint64(0))), Kind: "lock", Name: "jobs/orders", Verify: true, Expect: "ok", Token: "18446744073709551615"},
		{About: "an election's term for an election guard", Sequencer: k1.Sign(fence.Sequencer{Kind: fence.KindElection, Name: "scheduler", Token: 52}), Kind: "election", Name: "scheduler", Verify: true, Expect: "ok", Token: "52"},
		{About: "a plain sequencer where signatures are required", Sequencer: "jobs/orders@4711", Kind: "lock", Name: "jobs/orders", Verify: true, Expect: "unsigned"},
		{About: "the token changed after signing", Sequencer: tampered, Kind: "lock", Name: "jobs/orders", Verify: true, Expect: "bad_signature"},
		{About: "a known key id, another key", Sequencer: impostor.Sign(lock("jobs/orders", 4711)), Kind: "lock", Name: "jobs/orders", Verify: true, Expect: "bad_signature"},
		{About: "an unknown key id", Sequencer: stranger.Sign(lock("jobs/orders", 4711)), Kind: "lock", Name: "jobs/orders", Verify: true, Expect: "bad_signature"},
		{About: "the same signature spelled another way", Sequencer: respelled, Kind: "lock", Name: "jobs/orders", Verify: true, Expect: "bad_signature"},
		{About: "an election's term of the same name, signed, for a lock guard", Sequencer: k1.Sign(fence.Sequencer{Kind: fence.KindElection, Name: "jobs/orders", Token: 9999}), Kind: "lock", Name: "jobs/orders", Verify: true, Expect: "wrong_lock"},
		{About: "a semaphore's token, signed, for a lock guard", Sequencer: k1.Sign(fence.Sequencer{Kind: fence.KindSemaphore, Name: "jobs/orders", Token: 9999}), Kind: "lock", Name: "jobs/orders", Verify: true, Expect: "wrong_lock"},
		{About: "another lock's sequencer, signed", Sequencer: k1.Sign(lock("jobs/invoices", 9999)), Kind: "lock", Name: "jobs/orders", Verify: true, Expect: "wrong_lock"},
		{About: "a signed sequencer without its signature", Sequencer: signed[:strings.LastIndexByte(signed, '.')], Kind: "lock", Name: "jobs/orders", Verify: true, Expect: "invalid"},
		{About: "a plain sequencer, no verification", Sequencer: "jobs/orders@4711", Kind: "lock", Name: "jobs/orders", Expect: "ok", Token: "4711"},
		{About: "a shared hold, no verification", Sequencer: "shared:jobs/orders@12", Kind: "shared", Name: "jobs/orders", Expect: "ok", Token: "12"},
		{About: "an election's term for a lock guard, no verification", Sequencer: "election:jobs/orders@12", Kind: "lock", Name: "jobs/orders", Expect: "wrong_lock"},
		{About: "a leading zero", Sequencer: "jobs/orders@04711", Kind: "lock", Name: "jobs/orders", Expect: "invalid"},
		{About: "the lock kind spelled out", Sequencer: "lock:jobs/orders@4711", Kind: "lock", Name: "jobs/orders", Expect: "invalid"},
		{About: "a token above 2^64-1", Sequencer: "jobs/orders@18446744073709551616", Kind: "lock", Name: "jobs/orders", Expect: "invalid"},
		{About: "an absolute name", Sequencer: "/jobs/orders@1", Kind: "lock", Name: "jobs/orders", Expect: "invalid"},
	}
	keys, err := fence.LoadVerifyKeys(keysFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if got := goGuard(keys, v); got != v.Expect {
			t.Fatalf("signed vector %q (%s): the fence package says %s, the vector %s", v.Sequencer, v.About, got, v.Expect)
		}
	}
	b, err := json.MarshalIndent(map[string]any{"verify_keys_file": keysFile, "vectors": vs}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "signed.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// goGuard is what the fence package answers for a vector.
func goGuard(keys *fence.Verifier, v signedVector) string {
	var seq fence.Sequencer
	var err error
	if v.Verify {
		seq, err = keys.Verify(v.Sequencer)
	} else {
		seq, err = fence.ParseSequencer(v.Sequencer)
	}
	switch {
	case err == nil:
	case errors.Is(err, fence.ErrUnsigned):
		return "unsigned"
	case errors.Is(err, fence.ErrBadSignature):
		return "bad_signature"
	default:
		return "invalid"
	}
	if seq.Kind.String() != v.Kind || seq.Name != v.Name {
		return "wrong_lock"
	}
	if fmt.Sprint(seq.Token) != v.Token {
		return "token " + fmt.Sprint(seq.Token)
	}
	return "ok"
}

// fenceCaseLine is a suite's report of one case.
type fenceCaseLine struct{ lang, db, name, mode, verdict, detail string }

func parseFenceCases(out string) []fenceCaseLine {
	var lines []fenceCaseLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.SplitN(strings.TrimSpace(sc.Text()), " ", 7)
		if len(f) < 6 || f[0] != "FENCECASE" {
			continue
		}
		l := fenceCaseLine{lang: f[1], db: f[2], name: f[3], mode: f[4], verdict: f[5]}
		if len(f) == 7 {
			l.detail = f[6]
		}
		lines = append(lines, l)
	}
	return lines
}

// runFenceSuite runs a suite's command in dir with the fence variables,
// fails the test if it fails, and holds its report to the shared cases:
// every case passes with the fence on every database, and every case that
// names the "none" control fails under it.
func runFenceSuite(t *testing.T, lang, dir string, timeout time.Duration, name string, args ...string) {
	t.Helper()
	interop, after := interopEnv(t, lang)
	out := runSuite(t, timeout, dir, append(fenceEnv(t), interop...), name, args...)
	lines := parseFenceCases(out.all)
	checkCases(t, lang, casesFile, fenceColumns, lines)
	checkCases(t, lang, redisCasesFile, redisCaseColumns, lines)
	after()
}

type dbCasesFile struct {
	Cases []struct {
		Name       string   `json:"name"`
		FailsUnder []string `json:"fails_under"`
	} `json:"cases"`
}

func readCases(t testing.TB, file string) (cs dbCasesFile) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(b, &cs)
	}
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// checkCases holds a suite's report of a cases file: every case passes
// with every recipe of every column, and fails under a column's control
// when its fails_under names it, as under any other control a suite ran
// on that database. The table of all of them goes to the test's log.
func checkCases(t testing.TB, lang, file string, cols []caseColumn, lines []fenceCaseLine) {
	t.Helper()
	cs := readCases(t, file)
	got := map[string]fenceCaseLine{}
	for _, l := range lines {
		if l.lang == lang {
			got[l.db+"/"+l.name+"/"+l.mode] = l
		}
	}
	verdict := func(key string) string {
		if l, ok := got[key]; ok {
			return l.verdict
		}
		return "missing"
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-40s", "case ("+lang+")")
	for _, col := range cols {
		fmt.Fprintf(&table, " %-28s", col.db+" "+strings.Join(append(slices.Clone(col.recipes), col.control), "/"))
	}
	for _, c := range cs.Cases {
		fmt.Fprintf(&table, "\n%-40s", c.Name)
		for _, col := range cols {
			var cells []string
			for _, recipe := range col.recipes {
				key := col.db + "/" + c.Name + "/" + recipe
				if cells = append(cells, verdict(key)); verdict(key) != "pass" {
					t.Errorf("%s %s: case %s with the %s recipe: %s %s", lang, col.db, c.Name, recipe, verdict(key), got[key].detail)
				}
			}
			control := verdict(col.db + "/" + c.Name + "/" + col.control)
			if slices.Contains(c.FailsUnder, col.control) {
				if control != "fail" {
					t.Errorf("%s %s: the %s control was not seen failing case %s (%s)", lang, col.db, col.control, c.Name, control)
				}
				control += "*"
			}
			fmt.Fprintf(&table, " %-28s", strings.Join(append(cells, control), " / "))
		}
	}
	table.WriteString("\n* the case names the control: it must fail under it\n")
	for _, l := range lines {
		i := slices.IndexFunc(cols, func(c caseColumn) bool { return c.db == l.db })
		if l.lang != lang || i < 0 || slices.Contains(cols[i].recipes, l.mode) || l.mode == cols[i].control {
			continue
		}
		for _, c := range cs.Cases {
			if c.Name == l.name && slices.Contains(c.FailsUnder, l.mode) {
				if l.verdict != "fail" {
					t.Errorf("%s %s: the %s control was not seen failing case %s", lang, l.db, l.mode, c.Name)
				}
				fmt.Fprintf(&table, "control %s on %s: %s %s %s\n", l.mode, l.db, c.Name, l.verdict, l.detail)
			}
		}
	}
	t.Logf("%s, %s:\n%s", file, lang, table.String())
}

// errorRecorder is a test whose errors are kept, not reported.
type errorRecorder struct {
	testing.TB
	errs []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckCasesCatchesAGap is checkCases' control: a report of every
// case passing with the fence and failing without it holds; one that
// leaves a case out, or whose control passes a case naming it, does not.
func TestCheckCasesCatchesAGap(t *testing.T) {
	var lines []fenceCaseLine
	for _, c := range readCases(t, redisCasesFile).Cases {
		lines = append(lines, fenceCaseLine{lang: "go", db: "redis-cases", name: c.Name, mode: "fence", verdict: "pass"},
			fenceCaseLine{lang: "go", db: "redis-cases", name: c.Name, mode: "unguarded", verdict: "fail"})
	}
	controlPasses := slices.Clone(lines)
	controlPasses[1].verdict = "pass" // the first case's, which names the control
	for i, report := range [][]fenceCaseLine{lines, lines[2:], controlPasses} {
		r := &errorRecorder{TB: t}
		checkCases(r, "go", redisCasesFile, redisCaseColumns, report)
		if (len(r.errs) == 0) != (i == 0) {
			t.Errorf("report %d: errors %q", i, r.errs)
		}
	}
}

// TestPythonFences runs the Python fences' suite (clients/python/fence_tests:
// psycopg 3, PyMySQL, redis-py, cryptography, all Debian's).
func TestPythonFences(t *testing.T) {
	py := python(t, "psycopg", "pymysql", "redis", "cryptography")
	runFenceSuite(t, "python", "python", 4*time.Minute, py, "-m", "unittest", "discover", "-v", "-s", "fence_tests", "-t", ".")
}

// TestJavaFences runs the Java fences' JUnit suite (build.sh fence-test,
// with Debian's PostgreSQL and MariaDB JDBC drivers).
func TestJavaFences(t *testing.T) {
	runFenceSuite(t, "java", "java", 5*time.Minute, "bash", "build.sh", "fence-test")
}

// TestJSFences runs the JavaScript fences' suite (clients/js/fence-test)
// with node --test, after `npm ci` there installs the drivers its lock
// file pins (pg, mysql2, ioredis) when they are missing or stale.
func TestJSFences(t *testing.T) {
	node, dir := node(t), filepath.Join("js", "fence-test")
	npmDeps(t, dir)
	runFenceSuite(t, "js", dir, 4*time.Minute, node, nodeTests(t, dir, ".")...)
}

// The Go fences and the other languages' share one fence table and one
// Redis key (under redisfence.Prefix). Before a suite runs, the Go fences
// raise the max of the key interop/<language> to 1000 on each database;
// the suite must find 999 stale and 1000 and then 1001 admitted (its
// interop test), and after it the Go fences must find the max at 1001 and
// 1000 stale. The suite also compares its SQL with the Go one
// (SEQD_TEST_FENCE_GO_CREATE_*); the script is one file, which each
// built package carries (TestFenceScriptInPackages).

const interopSeed, interopAfter = 1000, 1001

// goFences are the Go fences on the harness's databases.
type goFences struct {
	pg, maria *sqlfence.Fence
	rd        *redisfence.Fence
}

func openGoFences(t *testing.T, ctx context.Context) goFences {
	t.Helper()
	open := func(driver, dsn string, d sqlfence.Dialect) *sqlfence.Fence {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		f, err := sqlfence.New(db, d, sqlfence.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Create(ctx); err != nil {
			t.Fatal(err)
		}
		return f
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisLazy.Get(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	rf, err := redisfence.New(ctx, rdb, redisfence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return goFences{
		pg:    open("pgx", pgLazy.Get(t).DSN(), sqlfence.Postgres),
		maria: open("mysql", mariaLazy.Get(t).DSN(), sqlfence.MySQL),
		rd:    rf,
	}
}

// interopEnv seeds interop/<lang> and returns the suite's variables and
// the check to run after it.
func interopEnv(t *testing.T, lang string) (vars []string, after func()) {
	t.Helper()
	key := "interop/" + lang
	// goFence is the Go fence of each database: what it reads as the max
	// of key, and a write of key with a token.
	type goFence struct {
		max func() (uint64, error)
		do  func(uint64) error
	}
	fences := func(ctx context.Context) map[string]goFence {
		g := openGoFences(t, ctx)
		return map[string]goFence{
			"postgres": {func() (uint64, error) { return g.pg.Max(ctx, key) }, func(tok uint64) error { return g.pg.Do(ctx, key, tok, nil) }},
			"mariadb":  {func() (uint64, error) { return g.maria.Max(ctx, key) }, func(tok uint64) error { return g.maria.Do(ctx, key, tok, nil) }},
			"redis": {func() (uint64, error) { return g.rd.Max(ctx, key) }, func(tok uint64) error {
				_, err := g.rd.Do(ctx, key, tok, redisfence.Cmd{})
				return err
			}},
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, f := range fences(ctx) {
		if err := f.do(interopSeed); err != nil {
			t.Fatalf("the Go fence on %s: %v", name, err)
		}
	}
	pgSQL, _ := sqlfence.New(nil, sqlfence.Postgres, sqlfence.Options{})
	mySQL, _ := sqlfence.New(nil, sqlfence.MySQL, sqlfence.Options{})
	vars = []string{
		"SEQD_TEST_FENCE_INTEROP_KEY=" + key,
		"SEQD_TEST_FENCE_GO_CREATE_POSTGRES=" + pgSQL.CreateSQL(),
		"SEQD_TEST_FENCE_GO_CREATE_MARIADB=" + mySQL.CreateSQL(),
	}
	return vars, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for name, f := range fences(ctx) {
			if got, err := f.max(); err != nil || got != interopAfter {
				t.Errorf("%s: after the %s suite the Go fence reads the max of %s as %d (%v), want %d", name, lang, key, got, err, interopAfter)
			}
			if err := f.do(interopSeed); !errors.Is(err, fence.ErrStaleToken) {
				t.Errorf("%s: the Go fence admitted %d on %s after the %s suite raised it to %d (%v)", name, interopSeed, key, lang, interopAfter, err)
			}
		}
	}
}
