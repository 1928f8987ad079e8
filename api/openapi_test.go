package api_test

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seqd/seqd/api"
)

// docs/openapi.yaml is written from this package: its schemas from the wire
// types (fields, JSON names, required fields, descriptions from the field
// comments, limits from the constants) and its paths from the families.
// TestOpenAPIMatchesHandler (package sequencer) holds it against the
// handler, route by route, status by status, code by code.

var update = flag.Bool("update", false, "rewrite docs/openapi.yaml from the wire types")

const openAPIFile = "../docs/openapi.yaml"

// TestOpenAPIIsGenerated fails when docs/openapi.yaml is not what the wire
// types say; `go test ./api -run TestOpenAPIIsGenerated -update` rewrites
// it.
func TestOpenAPIIsGenerated(t *testing.T) {
	want := openAPI(t)
	if *update {
		if err := os.WriteFile(openAPIFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("docs/openapi.yaml differs from the wire types at line %d:\n got: %s\nwant: %s\nrun: go test ./api -run TestOpenAPIIsGenerated -update", i+1, g, w)
			}
		}
	}
}

// TestOpenAPISchemasFollowTheTypes is the control: a field added to a wire
// type shows in its schema, and omitempty decides whether it is required.
func TestOpenAPISchemasFollowTheTypes(t *testing.T) {
	type probe struct {
		Must  string        `json:"must"`
		May   uint64        `json:"may,omitempty"`
		Wait  *api.Duration `json:"wait,omitempty"`
		Skip  string        `json:"-"`
		Items []api.LockRef `json:"items"`
	}
	g := newGen(t)
	s := g.schema(reflect.TypeFor[probe](), true)
	props := s.get("properties").(om)
	var names []string
	for _, p := range props {
		names = append(names, p.k)
	}
	if got := strings.Join(names, " "); got != "must may wait items" {
		t.Errorf("properties %q, want %q", got, "must may wait items")
	}
	if got := fmt.Sprint(s.get("required")); got != "[must items]" {
		t.Errorf("required %s, want [must items]", got)
	}
	if s.get("additionalProperties") != false {
		t.Errorf("a request's schema allows other properties")
	}
}

// om is a YAML mapping that keeps its keys' order.
type om []kv

type kv struct {
	k string
	v any
}

func (o om) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, e := range o {
		var v yaml.Node
		if err := v.Encode(e.v); err != nil {
			return nil, err
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e.k}, &v)
	}
	return n, nil
}

func (o om) get(k string) any {
	for _, e := range o {
		if e.k == k {
			return e.v
		}
	}
	return nil
}

// with is o with k set to v (replaced in place, or added at the end).
func (o om) with(k string, v any) om {
	out := append(om(nil), o...)
	for i, e := range out {
		if e.k == k {
			out[i].v = v
			return out
		}
	}
	return append(out, kv{k, v})
}

func m(kvs ...any) om {
	o := make(om, 0, len(kvs)/2)
	for i := 0; i < len(kvs); i += 2 {
		o = append(o, kv{kvs[i].(string), kvs[i+1]})
	}
	return o
}

func ref(name string) om { return m("$ref", "#/components/schemas/"+name) }

var (
	durationSchema = m("type", "string", "description", "a Go duration such as 15s or 1m30s")
	tokenSchema    = m("type", "integer", "format", "uint64", "minimum", api.MinToken,
		"description", "a 64-bit unsigned integer: parse it exactly (above 2^53 a float loses it)")
	leaseIDSchema = m("type", "string", "pattern", fmt.Sprintf("^[0-9a-f]{%d}$", api.LeaseIDLen))
	nameSchema    = m("type", "string", "maxLength", api.MaxNameBytes,
		"description", fmt.Sprintf("segments of [A-Za-z0-9._-] joined by /, at most %d bytes", api.MaxNameBytes))
)

// gen turns wire types into schemas, with the field comments of the
// package's source as descriptions.
type gen struct {
	docs map[string]map[string]string // type → Go field → its comment
	tdoc map[string]string            // type → its comment
}

func newGen(t *testing.T) *gen {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/seqd/seqd/api", doc.AllDecls)
	if err != nil {
		t.Fatal(err)
	}
	g := &gen{docs: map[string]map[string]string{}, tdoc: map[string]string{}}
	for _, typ := range p.Types {
		g.tdoc[typ.Name] = oneLine(typ.Doc)
		for _, spec := range typ.Decl.Specs {
			st, ok := spec.(*ast.TypeSpec).Type.(*ast.StructType)
			if !ok {
				continue
			}
			fields := map[string]string{}
			for _, f := range st.Fields.List {
				if f.Doc == nil {
					continue
				}
				for _, n := range f.Names {
					fields[n.Name] = oneLine(f.Doc.Text())
				}
			}
			g.docs[typ.Name] = fields
		}
	}
	return g
}

// fieldIntro is the start of a field comment that names the field and its
// JSON name: `Owner ("owner", required) names …`.
var fieldIntro = regexp.MustCompile(`^\w+ \("[a-z_]+"(, ([^()]|\([^()]*\))*)?\) `)

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// fieldDoc is the comment of a field, without the words that name it.
func (g *gen) fieldDoc(typ, field string) string {
	d := g.docs[typ][field]
	if loc := fieldIntro.FindStringIndex(d); loc != nil {
		d = d[loc[1]:]
	}
	return d
}

var (
	durationType = reflect.TypeFor[api.Duration]()
	timeType     = reflect.TypeFor[time.Time]()
)

// schema is t's schema: its JSON fields in order (embedded structs
// inlined), a field required unless it is omitempty; strict for a request
// body, which the daemon decodes refusing unknown fields.
func (g *gen) schema(t reflect.Type, strict bool) om {
	var props om
	var required []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			p := g.property(f.Type, name)
			if d := g.fieldDoc(t.Name(), f.Name); d != "" {
				p = p.with("description", d)
			}
			props = append(props, kv{name, p})
			if !strings.Contains(opts, "omitempty") && !optional[t.Name()+"."+name] {
				required = append(required, name)
			}
		}
	}
	walk(t)
	s := m("type", "object", "properties", props)
	if len(required) > 0 {
		s = append(s, kv{"required", required})
	}
	if strict {
		s = append(s, kv{"additionalProperties", false})
	}
	if d := g.tdoc[t.Name()]; d != "" {
		s = append(s, kv{"description", d})
	}
	return s
}

// property is the schema of a field of type t named name (JSON).
func (g *gen) property(t reflect.Type, name string) om {
	nullable := false
	if t.Kind() == reflect.Pointer {
		nullable, t = true, t.Elem()
	}
	var p om
	switch {
	case t == durationType:
		p = durationSchema
	case t == timeType:
		p = m("type", "string", "format", "date-time")
	case name == "lease_id":
		p = leaseIDSchema
	case name == "name" || name == "names" && t.Kind() == reflect.Slice:
		if t.Kind() == reflect.Slice {
			p = m("type", "array", "items", nameSchema)
		} else {
			p = nameSchema
		}
	case t.Kind() == reflect.Uint64 && (name == "token" || name == "term" || name == "current_token"):
		p = tokenSchema
	case t.Kind() == reflect.Uint64:
		p = m("type", "integer", "format", "uint64")
	case t.Kind() == reflect.String:
		p = m("type", "string")
	case t.Kind() == reflect.Bool:
		p = m("type", "boolean")
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint32:
		p = m("type", "integer")
	case t.Kind() == reflect.Struct:
		return ref(t.Name()) // a $ref takes no siblings in OpenAPI 3.0
	case t.Kind() == reflect.Slice:
		items := g.property(t.Elem(), "")
		p = m("type", "array", "items", items)
	default:
		panic(fmt.Sprintf("no schema for %v", t))
	}
	if nullable && t != durationType && t.Kind() != reflect.Struct && name != "ttl" && name != "wait" && name != "lock_delay" {
		p = p.with("nullable", true)
	}
	return p
}

// optional are the request fields without omitempty whose zero value the
// daemon takes as absent.
var optional = map[string]bool{
	"SemaphoreAcquireRequest.limit": true, // a retry with a lease_id may leave it out
	"ProclaimRequest.value":         true, // "" publishes an empty value
}

// limits are the bounds the daemon enforces on fields, from the package's
// constants, as "Type.json": extra keywords.
var limits = map[string]om{
	"AcquireRequest.owner":          m("maxLength", api.MaxOwnerBytes),
	"AcquireRequest.mode":           m("enum", []string{api.ModeExclusive, api.ModeShared}),
	"SemaphoreAcquireRequest.owner": m("maxLength", api.MaxOwnerBytes),
	"SemaphoreAcquireRequest.limit": m("minimum", 1, "maximum", api.MaxSemaphoreLimit),
	"CampaignRequest.owner":         m("maxLength", api.MaxOwnerBytes),
	"CampaignRequest.value":         m("maxLength", api.MaxValueBytes),
	"ProclaimRequest.value":         m("maxLength", api.MaxValueBytes),
	"MultiAcquireRequest.owner":     m("maxLength", api.MaxOwnerBytes),
	"MultiAcquireRequest.names":     m("minItems", 1, "maxItems", api.MaxMultiLocks),
	"RenewManyRequest.leases":       m("minItems", 1, "maxItems", api.MaxRenewBatch),
	"BreakRequest.reason":           m("maxLength", api.MaxReasonBytes),
	"Contender.mode":                m("enum", []string{api.ModeExclusive, api.ModeShared}),
	"Contender.client":              m("enum", []string{"seqd", "kazoo", "curator", "zk.Lock", "planted", "unknown"}),
	"Lease.mode":                    m("enum", []string{api.ModeShared}),
	"CheckResponse.code":            m("enum", []string{api.CodeStaleToken, api.CodeNotHeld}),
	"ProbeResponse.status":          m("enum", []string{"ok", "ready"}),
}

// schemas are the components' schemas: every body type of the API, the
// requests strict.
func (g *gen) schemas() om {
	var out om
	for _, s := range []struct {
		t      reflect.Type
		strict bool
	}{
		{reflect.TypeFor[api.AcquireRequest](), true},
		{reflect.TypeFor[api.SemaphoreAcquireRequest](), true},
		{reflect.TypeFor[api.CampaignRequest](), true},
		{reflect.TypeFor[api.ProclaimRequest](), true},
		{reflect.TypeFor[api.LeaseRequest](), true},
		{reflect.TypeFor[api.RenewManyRequest](), true},
		{reflect.TypeFor[api.RenewItem](), true},
		{reflect.TypeFor[api.RenewManyResponse](), false},
		{reflect.TypeFor[api.RenewResult](), false},
		{reflect.TypeFor[api.CheckRequest](), true},
		{reflect.TypeFor[api.CheckResponse](), false},
		{reflect.TypeFor[api.Lease](), false},
		{reflect.TypeFor[api.ReleaseResponse](), false},
		{reflect.TypeFor[api.MultiAcquireRequest](), true},
		{reflect.TypeFor[api.LockRef](), true},
		{reflect.TypeFor[api.MultiLeaseRequest](), true},
		{reflect.TypeFor[api.LockToken](), false},
		{reflect.TypeFor[api.MultiLease](), false},
		{reflect.TypeFor[api.MultiLockStatus](), false},
		{reflect.TypeFor[api.MultiLeaseList](), false},
		{reflect.TypeFor[api.Contender](), false},
		{reflect.TypeFor[api.BreakRequest](), true},
		{reflect.TypeFor[api.BreakResponse](), false},
		{reflect.TypeFor[api.LockStatus](), false},
		{reflect.TypeFor[api.SemaphoreStatus](), false},
		{reflect.TypeFor[api.LeaderView](), false},
		{reflect.TypeFor[api.ElectionStatus](), false},
		{reflect.TypeFor[api.Overview](), false},
		{reflect.TypeFor[api.ProbeResponse](), false},
		{reflect.TypeFor[api.ErrorBody](), false},
	} {
		sc := g.schema(s.t, s.strict)
		props := sc.get("properties").(om)
		for i, p := range props {
			if extra, ok := limits[s.t.Name()+"."+p.k]; ok {
				q := p.v.(om)
				for _, e := range extra {
					q = q.with(e.k, e.v)
				}
				props[i].v = q
			}
		}
		name := s.t.Name()
		if name == "ErrorBody" {
			name = "Error"
		}
		out = append(out, kv{name, sc})
	}
	return out
}

// family is a family of leases as the daemon's route table has it: its
// grant and end actions, bodies, status, and each action's 409 codes.
type family struct {
	f                  api.Family
	noun, grant, end   string
	request, status    string
	grant409, renew409 []string
	extra              [][2]string // action, its request body
}

var families = []family{
	{f: api.Locks, noun: "lock", grant: "acquire", end: "release", request: "AcquireRequest", status: "LockStatus",
		grant409: []string{api.CodeHeld}, renew409: []string{api.CodeStaleToken, api.CodeLost, api.CodeBroken}},
	{f: api.Semaphores, noun: "semaphore", grant: "acquire", end: "release", request: "SemaphoreAcquireRequest", status: "SemaphoreStatus",
		grant409: []string{api.CodeHeld, api.CodeLimitMismatch}, renew409: []string{api.CodeLost, api.CodeBroken}},
	{f: api.Elections, noun: "election", grant: "campaign", end: "resign", request: "CampaignRequest", status: "ElectionStatus",
		grant409: []string{api.CodeHeld}, renew409: []string{api.CodeStaleToken, api.CodeLost, api.CodeBroken},
		extra: [][2]string{{"proclaim", "ProclaimRequest"}}},
}

func jsonBody(schema string) om {
	return m("required", true, "content", m("application/json", m("schema", ref(schema))))
}

func answer(description, schema string, codes ...string) om {
	r := m("description", description, "content", m("application/json", m("schema", ref(schema))))
	if len(codes) > 0 {
		r = append(r, kv{"x-codes", codes})
	}
	return r
}

// errs are the error answers of an operation, by status.
func errs(statuses []int, conflict []string, forbidden [2]string) om {
	var out om
	for _, s := range statuses {
		switch s {
		case 400:
			out = append(out, kv{"400", answer("a malformed or out-of-range request; nothing changed", "Error", api.CodeBadRequest)})
		case 401:
			out = append(out, kv{"401", answer("a missing or wrong bearer token (with --api-token-file)", "Error", api.CodeUnauthorized)})
		case 403:
			out = append(out, kv{"403", answer(forbidden[0], "Error", forbidden[1])})
		case 409:
			out = append(out, kv{"409", answer("refused: "+strings.Join(conflict, ", "), "Error", conflict...)})
		case 429:
			out = append(out, kv{"429", answer("beyond the caller's quota in the daemon's policy file (the sentence names it); nothing changed", "Error", api.CodeQuotaExceeded)})
		case 503:
			out = append(out, kv{"503", answer("ZooKeeper cannot be reached or trusted now; try again", "Error", api.CodeUnavailable)})
		}
	}
	return out
}

func responses(ok om, more om) om { return append(m("200", ok), more...) }

var (
	nameParam = m("name", "name", "in", "path", "required", true, "schema", nameSchema,
		"description", "may hold '/': each segment path-escaped")
	blockingQuery = []om{
		m("name", "index", "in", "query", "schema", m("type", "integer", "format", "uint64"),
			"description", "a blocking read: answer once the state's index differs from this one"),
		m("name", "wait", "in", "query", "schema", durationSchema,
			"description", fmt.Sprintf("with index: how long to wait (default %v, at most %v)", shortDuration(api.DefaultBlockingWait), shortDuration(api.MaxWait))),
	}
	leaseIDQuery = m("name", "lease_id", "in", "query", "schema", leaseIDSchema, "description", "this daemon's lease: adds safe_for_ms")
)

// shortDuration writes 5m for 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	return strings.TrimSuffix(s, "0m")
}

func post(summary string, params []om, req string, ok om, conflict []string) om {
	return postAnswering([]int{400, 401, 409, 503}, summary, params, req, ok, conflict)
}

// policyForbids is the 403 of a request the daemon's policy file refuses.
var policyForbids = [2]string{"the daemon's policy file does not allow the caller this (the sentence names the rule)", api.CodeForbidden}

// grant is post for a grant, which the policy judges and the quotas bound.
func grant(summary string, params []om, req string, ok om, conflict []string) om {
	return postAnswering([]int{400, 401, 403, 409, 429, 503}, summary, params, req, ok, conflict)
}

// renewal is post for a renewal, whose ttl the quotas bound.
func renewal(summary string, params []om, req string, ok om, conflict []string) om {
	return postAnswering([]int{400, 401, 409, 429, 503}, summary, params, req, ok, conflict)
}

func postAnswering(statuses []int, summary string, params []om, req string, ok om, conflict []string) om {
	op := m("summary", summary)
	if params != nil {
		op = append(op, kv{"parameters", params})
	}
	op = append(op, kv{"requestBody", jsonBody(req)}, kv{"responses", responses(ok, errs(statuses, conflict, policyForbids))})
	return m("post", op)
}

func (f family) paths() om {
	n := string(f.f)
	params := []om{nameParam}
	end := "end a lease"
	if f.f == api.Elections {
		end += ": the next candidate is elected at once"
	}
	p := m(
		"/v1/"+n+"/{name}/"+f.grant, grant("grant a lease on the "+f.noun+" NAME, waiting up to wait", params, f.request,
			answer("the lease (a new one, or a live lease this request retries)", "Lease"), f.grant409),
		"/v1/"+n+"/{name}/renew", renewal("renew a lease, keeping its token", params, "LeaseRequest",
			answer("the lease, with its new expiry", "Lease"), f.renew409),
		"/v1/"+n+"/{name}/"+f.end, post(end, params, "LeaseRequest", answer("ended", "ReleaseResponse"), f.renew409),
	)
	for _, e := range f.extra {
		action, req := e[0], e[1]
		p = append(p, kv{"/v1/" + n + "/{name}/" + action, post("change the value the leader publishes, keeping its term", params, req,
			answer("the lease", "Lease"), f.renew409)})
	}
	p = append(p,
		kv{"/v1/" + n + "/{name}", m("get", m(
			"summary", "the "+f.noun+"'s state, read from ZooKeeper (any daemon's holders); a blocking read with index",
			"parameters", append(append([]om{nameParam}, blockingQuery...), leaseIDQuery),
			"responses", responses(answer("the state; its index is also in the "+api.IndexHeader+" header", f.status), errs([]int{400, 401, 403, 503}, nil, policyForbids))))},
		kv{"/v1/" + n + "/{name}/break", m("post", m(
			"summary", "break the "+f.noun+"'s holder named by its token, only if it still holds: its contender is deleted, the next "+
				"grant has a higher token, its renew answers 409 broken; needs the admin token",
			"parameters", params, "requestBody", jsonBody("BreakRequest"),
			"responses", responses(answer("broken (the audit line is written first)", "BreakResponse"),
				errs([]int{400, 401, 403, 409, 503}, []string{api.CodeNotHeld}, [2]string{"no admin token sent, or the daemon has none; or, with a policy file, no rule lets the caller break", api.CodeForbidden}))))},
		kv{"/v1/" + n, m("get", m(
			"summary", "without a query: the live "+n+" leases of this daemon, without lease ids or signed sequencers; with "+
				"all=1: the state of every "+f.noun+" under the daemon's root (holders and queues), a blocking read with index",
			"parameters", []om{
				m("name", "all", "in", "query", "schema", m("type", "integer", "enum", []int{1})),
				m("name", "index", "in", "query", "schema", m("type", "integer", "format", "uint64"), "description", "with all=1"),
				m("name", "wait", "in", "query", "schema", durationSchema, "description", "with all=1 and index"),
			},
			"responses", responses(m(
				"description", fmt.Sprintf(`{"%s":[Lease…]}, or with all=1 an Overview`, n),
				"content", m("application/json", m("schema", m("oneOf", []om{
					m("type", "object", "properties", m(n, m("type", "array", "items", ref("Lease"))), "required", []string{n}),
					ref("Overview"),
				})))), errs([]int{400, 401}, nil, [2]string{}))))},
	)
	return p
}

func multilockPaths() om {
	return m(
		"/v1/multilocks/acquire", grant("take every lock of names in one ZooKeeper transaction: all or nothing, and never a deadlock, whatever sets "+
			"others ask for", nil, "MultiAcquireRequest", answer("one lease, a token and a sequencer per lock", "MultiLease"), []string{api.CodeHeld}),
		"/v1/multilocks/renew", renewal("renew the lease of every lock at once", nil, "MultiLeaseRequest",
			answer("the lease, with its new expiry", "MultiLease"), []string{api.CodeStaleToken, api.CodeLost}),
		"/v1/multilocks/release", post("release every lock at once", nil, "MultiLeaseRequest",
			answer("released", "ReleaseResponse"), []string{api.CodeStaleToken, api.CodeLost}),
		"/v1/multilocks/{lease_id}", m("get", m(
			"summary", "a live multi-lock lease of this daemon, as its holder sees it; a blocking read with index",
			"parameters", append([]om{m("name", "lease_id", "in", "path", "required", true, "schema", leaseIDSchema)}, blockingQuery...),
			"responses", responses(answer("the lease", "MultiLockStatus"), errs([]int{400, 401, 409}, []string{api.CodeLost}, [2]string{})))),
		"/v1/multilocks", m("get", m(
			"summary", "the live multi-lock leases of this daemon, without lease ids or signed sequencers",
			"responses", responses(answer(`{"multilocks":[MultiLease…]}`, "MultiLeaseList"), errs([]int{400, 401}, nil, [2]string{})))),
	)
}

func openAPI(t *testing.T) []byte {
	t.Helper()
	g := newGen(t)
	var paths om
	for _, f := range families {
		paths = append(paths, f.paths()...)
	}
	paths = append(paths, multilockPaths()...)
	paths = append(paths,
		kv{"/v1/check", m("post", m(
			"summary", "is this token (this sequencer) its grant's current one? Chubby's CheckSequencer, read from ZooKeeper",
			"requestBody", jsonBody("CheckRequest"),
			"responses", append(m(
				"200", answer("valid", "CheckResponse"),
				"409", answer("not valid: stale (below the current token) or not held", "CheckResponse", api.CodeStaleToken, api.CodeNotHeld),
			), errs([]int{400, 401, 403, 503}, nil, [2]string{"a signed sequencer whose signature does not check with the daemon's keys", api.CodeBadSignature})...)))},
		kv{"/v1/renew", m("post", m(
			"summary", "renew many lock leases in one request, each answered as its own renew would be",
			"requestBody", jsonBody("RenewManyRequest"),
			"responses", responses(answer("one result per lease, in order", "RenewManyResponse"), errs([]int{400, 401}, nil, [2]string{}))))},
		kv{"/healthz", m("get", m("summary", "the process serves", "security", []om{},
			"responses", m("200", answer("ok", "ProbeResponse"))))},
		kv{"/readyz", m("get", m("summary", "the ZooKeeper session is connected", "security", []om{},
			"responses", responses(answer("ready", "ProbeResponse"), errs([]int{503}, nil, [2]string{}))))},
		kv{"/ui/", m("get", m("summary", "the status page (it asks for the API token and reads the API)", "security", []om{},
			"responses", m("200", m("description", "one HTML page, no external assets", "content", m("text/html", m("schema", m("type", "string")))))))},
		kv{"/metrics", m("get", m("summary", "Prometheus text", "security", []om{},
			"responses", m("200", m("description", "the metrics", "content", m("text/plain", m("schema", m("type", "string")))))))},
	)
	spec := m(
		"openapi", "3.0.3",
		"info", m("title", "seqd HTTP API", "version", "1", "description",
			"Fenced locks, semaphores and elections over ZooKeeper. Every lease carries a fencing token that is higher "+
				"for every new grant; send it (or the sequencer) with every write and let the resource refuse lower ones. "+
				"x-codes lists the error codes a response carries. Any other method on a documented path answers 405 "+
				"method_not_allowed (an Error) with an Allow header; a POST to a path without an action is one to a status. "+
				"Any path outside these answers 404 not_found, and a bug 500 internal (both Errors). Prose: http-api.md."),
		"servers", []om{m("url", "http://127.0.0.1:7070")},
		"security", []om{m("bearer", []string{})},
		"components", m(
			"securitySchemes", m("bearer", m("type", "http", "scheme", "bearer",
				"description", "only with --api-token-file; /healthz, /readyz and /metrics need none")),
			"schemas", g.schemas(),
			"responses", m(
				"NotFound", answer("no such endpoint", "Error", api.CodeNotFound),
				"MethodNotAllowed", answer("the method is not one of the path's (see Allow)", "Error", api.CodeMethod),
				"Internal", answer("a bug: the daemon logs it", "Error", api.CodeInternal),
			),
		),
		"paths", paths,
	)
	var b bytes.Buffer
	b.WriteString("# seqd's HTTP API in OpenAPI 3, written from package api (go test ./api -run TestOpenAPIIsGenerated -update);\n" +
		"# TestOpenAPIMatchesHandler (sequencer/) checks it against the handler.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(spec); err != nil {
		t.Fatal(err)
	}
	enc.Close()
	return b.Bytes()
}
