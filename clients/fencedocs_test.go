package clients_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// docExample is a program of docs/fencing.md, marked
// "<!-- example: LANGUAGE DATABASE -->" before its code block, and the
// output shown in the text block after it.
type docExample struct {
	lang, db   string
	code, want string
}

var docExampleRE = regexp.MustCompile("(?s)<!-- example: (\\w+) (\\w+) -->\n```\\w+\n(.*?)```\n\n```text\n(.*?)```")

func docExamples(t *testing.T) []docExample {
	t.Helper()
	b, err := os.ReadFile("../docs/fencing.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []docExample
	for _, m := range docExampleRE.FindAllStringSubmatch(string(b), -1) {
		out = append(out, docExample{lang: m[1], db: m[2], code: m[3], want: m[4]})
	}
	// The Go examples have markers of one word (fence/internal/fencedocs).
	if n := len(docMarkerRE.FindAll(b, -1)); n != len(out) {
		t.Fatalf("docs/fencing.md has %d example markers of a language and a database, %d of them followed by a code block and its output", n, len(out))
	}
	return out
}

var docMarkerRE = regexp.MustCompile(`<!-- example: \w+ \w+ -->`)

var javaClassRE = regexp.MustCompile(`public class (\w+)`)

// TestFencingDocExamplesInPythonJavaJS runs each Python, Java and JavaScript example of
// docs/fencing.md as written, against the databases of the fences' suites,
// and compares what it prints with the output the document shows.
func TestFencingDocExamplesInPythonJavaJS(t *testing.T) {
	examples := docExamples(t)
	if len(examples) < 12 {
		t.Fatalf("docs/fencing.md has %d examples, want the 12 of Python, Java and JavaScript on PostgreSQL, MariaDB, Redis and signed sequencers", len(examples))
	}
	pg, maria, rd := pgLazy.Get(t), mariaLazy.Get(t), redisLazy.Get(t)
	signed := writeSignedVectors(t, t.TempDir())
	var vectors struct {
		Keys    string         `json:"verify_keys_file"`
		Vectors []signedVector `json:"vectors"`
	}
	b, err := os.ReadFile(signed)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vectors); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"DATABASE_URL=" + pg.URL(),
		"MYSQL_URL=" + maria.URL(),
		"MYSQL_HOST=" + maria.Host,
		"MYSQL_PORT=" + strconv.Itoa(maria.Port),
		"MYSQL_USER=" + maria.User,
		"MYSQL_DATABASE=" + maria.Database,
		"REDIS_URL=" + rd.URL(),
		"REDIS_HOST=" + rd.Host,
		"REDIS_PORT=" + strconv.Itoa(rd.Port),
		"SEQD_VERIFY_KEYS=" + vectors.Keys,
		"SEQUENCER=" + vectors.Vectors[0].Sequencer, // jobs/orders@4711, signed
	}
	jdbc := map[string]string{
		"postgres": "jdbc:postgresql://" + pg.Addr() + "/" + pg.Database + "?user=" + pg.User,
		"mariadb":  "jdbc:mariadb://" + maria.Addr() + "/" + maria.Database + "?user=" + maria.User,
	}
	var javaClasses string
	classesDir := t.TempDir() // outlives the subtests
	javaExamples := func(t *testing.T) string {
		t.Helper()
		if javaClasses != "" {
			return javaClasses
		}
		// Build the jar (unless it is newer than every source), then
		// compile every Java example at once (with the tests' RESP
		// connection, the Redis example's runner).
		if !upToDate("java/build/seqd-client.jar", "java/src/main") {
			if out, err := run(t, 5*time.Minute, ".", nil, "bash", "java/build.sh"); err != nil {
				t.Fatalf("java/build.sh: %v\n%s", err, out.all)
			}
		}
		dir := classesDir
		args := []string{"-d", filepath.Join(dir, "classes"), "-cp", abs(t, "java/build/seqd-client.jar"),
			"java/src/test/java/dev/seqd/fence/Resp.java", "java/src/test/java/dev/seqd/fence/DocRedisRunner.java"}
		for _, ex := range examples {
			if ex.lang != "java" {
				continue
			}
			m := javaClassRE.FindStringSubmatch(ex.code)
			if m == nil {
				t.Fatalf("a Java example has no public class:\n%s", ex.code)
			}
			src := filepath.Join(dir, m[1]+".java")
			writeFile(t, src, ex.code)
			args = append(args, src)
		}
		if out, err := run(t, 5*time.Minute, ".", nil, "javac", args...); err != nil {
			t.Fatalf("javac: %v\n%s", err, out.all)
		}
		javaClasses = filepath.Join(dir, "classes")
		return javaClasses
	}
	for _, ex := range examples {
		t.Run(ex.lang+"_"+ex.db, func(t *testing.T) {
			dir := t.TempDir()
			vars := env
			if u, ok := jdbc[ex.db]; ok {
				vars = append(slices.Clone(env), "JDBC_URL="+u)
			}
			var cmd []string
			switch ex.lang {
			case "python":
				f := filepath.Join(dir, "example.py")
				writeFile(t, f, ex.code)
				vars, cmd = append(slices.Clone(vars), "PYTHONPATH="+abs(t, "python")), []string{python(t), f}
			case "java":
				classes := javaExamples(t)
				m := javaClassRE.FindStringSubmatch(ex.code)
				if m == nil {
					t.Fatal("no public class in the example")
				}
				cp := classes + ":" + abs(t, "java/build/seqd-client.jar") + ":/usr/share/java/postgresql.jar:/usr/share/java/mariadb-java-client.jar"
				cmd = []string{"java", "-cp", cp, m[1]}
				if ex.db == "redis" {
					// No Redis client in the JDK: the example takes one as a
					// ScriptRunner, and the tests' RESP connection is it.
					cmd = []string{"java", "-cp", cp, "dev.seqd.fence.DocRedisRunner", m[1]}
				}
			case "js":
				jsdir := filepath.Join("js", "fence-test")
				npmDeps(t, jsdir)
				// In the test package, whose node_modules has pg, mysql2,
				// ioredis and seqd itself (file:..), as an application's would.
				f := abs(t, filepath.Join(jsdir, ".doc-example-"+ex.db+".mjs"))
				writeFile(t, f, ex.code)
				t.Cleanup(func() { os.Remove(f) })
				cmd = []string{node(t), f}
			default:
				t.Fatalf("example of unknown language %q", ex.lang)
			}
			out, err := run(t, 2*time.Minute, dir, vars, cmd[0], cmd[1:]...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", ex.lang, err, out.all)
			}
			if out.stdout != ex.want {
				t.Errorf("the %s %s example printed\n%s\nthe document shows\n%s(with stderr: %s)", ex.lang, ex.db, out.stdout, ex.want, out.all)
			}
		})
	}
}

// upToDate says whether file exists and is newer than every file under dir.
func upToDate(file, dir string) bool {
	st, err := os.Stat(file)
	if err != nil {
		return false
	}
	fresh := true
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			fresh = false
			return err
		}
		if info, err := d.Info(); err != nil || info.ModTime().After(st.ModTime()) {
			fresh = false
		}
		return nil
	})
	return fresh
}
