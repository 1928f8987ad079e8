package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// The status page under a policy, in headless Chromium: with team A's
// named token it shows team A's lock and not team B's; with team B's, the
// other way round (the control: the page would show the name).
func TestStatusPageHidesOtherIdentitiesNames(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("no headless browser (%v): apt-get install chromium, as scripts/deps.sh does", err)
	}
	zkc := zktest.StartT(t, testenv.Options{})
	const tokA, tokB = "team-a-token-0123456789abcdef", "team-b-token-0123456789abcdef"
	dir := t.TempDir()
	tokens, policy := filepath.Join(dir, "tokens"), filepath.Join(dir, "policy")
	writeSecret(t, tokens, "team-a "+tokA+"\nteam-b "+tokB+"\n")
	writeSecret(t, policy, "allow team-a * team-a/* *\nallow team-b * team-b/* *\n")
	addr, _ := startServe(t, "--zk", zkc.ConnectString(), "--tokens-file", tokens, "--policy-file", policy)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for tok, name := range map[string]string{tokA: "team-a/job", tokB: "team-b/job"} {
		cl, _ := client.New(addr, client.WithoutEnv(), client.WithAPIToken(tok))
		if _, err := cl.Acquire(ctx, name, client.Owner("o"), client.TTL(5*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer bcancel()
	// setToken puts tok into the API token field as typing would.
	setToken := func(tok string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`(() => { const el = document.getElementById("api-token"); el.value = `+strconv.Quote(tok)+`; el.dispatchEvent(new Event("input")); return true })()`)(ctx, tg)
			return err
		})
	}
	row := func(name string) chromedp.CSS { return chromedp.CSS(`tr[data-name="` + name + `"][data-held="true"]`) }
	for _, c := range []struct{ tok, shown, hidden string }{
		{tokA, "team-a/job", "team-b/job"},
		{tokB, "team-b/job", "team-a/job"},
	} {
		// A tab of its own: the page keeps its token in the tab's
		// sessionStorage.
		tab, closeTab := chromedp.NewContext(bctx)
		if err := chromedp.Do(tab, chromedp.Navigate(addr+"/ui/"), setToken(c.tok), chromedp.WaitVisible(row(c.shown))); err != nil {
			t.Fatalf("with %s's token the page does not show it: %v", c.shown, err)
		}
		// Both names come in one overview: with one shown, the other
		// would be too.
		n := countNodes(t, tab, `tr[data-name=\"`+c.hidden+`\"]`)
		closeTab()
		if n != 0 {
			t.Fatalf("with the token for %s the page shows %s (%d rows)", c.shown, c.hidden, n)
		}
	}
}
