package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// A page of another origin, in a real headless browser, tries what any
// site can against a daemon started the default way (loopback, no API
// token): a text/plain form POST (the body {"ttl":"1h","owner":"evil="}
// spelt as a form field), a no-cors fetch, a fetch that asks for a
// preflight, and, from a name rebound to 127.0.0.1, same-origin reads and
// grants. Each reaches the daemon or its preflight, and none gets a lease:
// the daemon's listing stays empty.
func TestWebPageGetsNoLease(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("no headless browser (%v): apt-get install chromium, as scripts/deps.sh does", err)
	}
	zkc := zktest.StartT(t, testenv.Options{})
	daemon, _ := startServe(t, "--zk", zkc.ConnectString())
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(daemon, "http://"))

	page := fmt.Sprintf(`<!doctype html><title>cute cats</title>
<form id="f" method="POST" enctype="text/plain" action="%[1]s/v1/locks/web/form/acquire">
<input type="hidden" name='{"ttl":"1h","owner":"evil=' value='"}'></form>
<script>
window.tries = {};
fetch("%[1]s/v1/locks/web/nocors/acquire", {method: "POST", mode: "no-cors", body: '{"ttl":"1h","owner":"evil"}'})
  .then(r => tries.nocors = "answered, " + r.type, e => tries.nocors = "failed: " + e);
fetch("%[1]s/v1/locks/web/json/acquire", {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"ttl":"1h","owner":"evil"}'})
  .then(r => tries.json = "status " + r.status, e => tries.json = "failed: " + e);
fetch("%[1]s/v1/locks").then(r => r.text()).then(b => tries.read = b, e => tries.read = "failed: " + e);
</script>`, daemon)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}))
	defer evil.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// A name of the attacker's that resolves to the daemon: DNS
		// rebinding without a DNS server.
		chromedp.Flag("host-resolver-rules", "MAP rebound.example 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer bcancel()
	eval := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return s
	}

	if err := chromedp.Do(bctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatal(err)
	}
	tries := eval(`new Promise(done => { const t = setInterval(() => {
		if (tries.nocors && tries.json && tries.read) { clearInterval(t); done(JSON.stringify(tries)); } }, 50); })`)
	t.Logf("from %s: %s", evil.URL, tries)
	// The no-cors fetch was sent and answered (opaque to the page); the
	// JSON one was stopped at its preflight; the read's answer is not the
	// page's to see.
	if !strings.Contains(tries, `"nocors":"answered, opaque"`) || !strings.Contains(tries, `"json":"failed`) || !strings.Contains(tries, `"read":"failed`) {
		t.Errorf("the page's fetches: %s", tries)
	}
	// The form navigates the tab to the daemon's answer.
	if err := chromedp.Do(bctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`document.getElementById("f").submit() === undefined`)(ctx, tg)
		return err
	}), chromedp.WaitVisible(chromedp.CSS(`body`))); err != nil {
		t.Fatal(err)
	}
	var answer string
	zktest.Eventually(t, 30*time.Second, "the form's answer is shown", func() bool {
		answer = eval(`location.href.startsWith(` + jsString(daemon) + `) ? document.body.innerText : ""`)
		return answer != ""
	})
	t.Logf("the form POST was answered: %s", answer)
	if !strings.Contains(answer, "another origin") || !strings.Contains(answer, `"code":"forbidden"`) {
		t.Errorf("the form POST was answered %q, want the refusal", answer)
	}

	// Rebinding: a page at rebound.example:<port> is served by the daemon,
	// so its requests are same-origin to the browser.
	rebound := "http://rebound.example:" + port
	if err := chromedp.Do(bctx, chromedp.Navigate(rebound+"/ui/")); err != nil {
		t.Fatal(err)
	}
	got := eval(`Promise.all([
		fetch("/v1/locks").then(r => "read " + r.status),
		fetch("/v1/locks/web/rebound/acquire", {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"ttl":"1h","owner":"evil"}'}).then(r => "acquire " + r.status),
	]).then(a => a.join(", "))`)
	t.Logf("from %s: %s", rebound, got)
	if got != "read 403, acquire 403" {
		t.Errorf("from a rebound name: %s, want read 403, acquire 403", got)
	}

	cl, _ := client.New(daemon, client.WithoutEnv())
	leases, err := cl.Leases(ctx, api.Locks)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 0 {
		t.Fatalf("the daemon lists %+v after the page's tries, want no lease", leases)
	}
	for _, name := range []string{"web/form", "web/nocors", "web/json", "web/rebound"} {
		if st, err := cl.Status(ctx, name); err != nil || st.Held {
			t.Errorf("%s: held %v, %v; want free", name, st.Held, err)
		}
	}
}

func jsString(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
