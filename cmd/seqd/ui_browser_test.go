package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/sequencer/httpapi"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// chromiumPath is Debian's chromium (scripts/deps.sh installs it).
const chromiumPath = "/usr/bin/chromium"

// artifactsDir is where a test saves files for people to look at:
// $SEQD_TEST_ARTIFACTS/<test name> when set, else a directory of its own
// that is kept when the test fails. The test logs it.
func artifactsDir(t *testing.T) string {
	t.Helper()
	var dir string
	if base := os.Getenv("SEQD_TEST_ARTIFACTS"); base != "" {
		dir = filepath.Join(base, t.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		d, err := os.MkdirTemp("", "seqd-"+t.Name()+"-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
		t.Cleanup(func() {
			if !t.Failed() {
				os.RemoveAll(dir)
			}
		})
	}
	t.Logf("artifacts (screenshots) in %s", dir)
	return dir
}

// The status page in a real headless browser: it asks for the API token,
// shows a lock that `seqd lock` holds and another with a queue, shows the
// first free within moments of its release, and breaks the second once the
// admin token is entered.
func TestStatusPageInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("no headless browser (%v): apt-get install chromium, as scripts/deps.sh does", err)
	}
	zkc := zktest.StartT(t, testenv.Options{})
	bin := lockTestBinary(t)
	const apiTok, adminTok = "api-token-0123456789abcdef", "admin-token-0123456789abcdef"
	addr, _ := startServe(t, "--zk", zkc.ConnectString(), "--api-token-file", writeToken(t, "api", apiTok), "--admin-token-file", writeToken(t, "admin", adminTok))
	shots := artifactsDir(t)
	t.Logf("the status page is %d bytes", httpapi.UIPageSize)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, _ := client.New(addr, client.WithoutEnv(), client.WithAPIToken(apiTok))

	// ui/job: held by `seqd lock`. ui/busy: a lease, with a `seqd lock`
	// queued behind it.
	startLock := func(name string) (*exec.Cmd, chan error) {
		cmd := exec.Command(bin, "lock", "--zk", zkc.ConnectString(), name, "--", "sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, done
	}
	job, jobDone := startLock("ui/job")
	busy, err := cl.Acquire(ctx, "ui/busy", client.Owner("batch-7"), client.TTL(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	startLock("ui/busy")
	zktest.Eventually(t, 30*time.Second, "seqd lock holds ui/job and waits on ui/busy", func() bool {
		a, err1 := cl.Status(ctx, "ui/job")
		b, err2 := cl.Status(ctx, "ui/busy")
		return err1 == nil && err2 == nil && a.Held && len(b.Queue) == 1
	})

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
		chromedp.WindowSize(1280, 720),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer bcancel()
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// The page redraws its tables at every change: read in one evaluation.
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(sel)+`) || {}).innerText || ""`))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }

	run("open /ui/ without a token",
		chromedp.Navigate(addr+"/ui/"),
		chromedp.WaitVisible(css(`#conn.bad`)),
	)
	conn := text(`#msg`)
	if !strings.Contains(conn, "API token") {
		t.Fatalf("without a token the page says %q, want it to ask for the API token", conn)
	}
	run("enter the API token and see the holders",
		chromedp.SendKeys(css(`#api-token`), apiTok),
		chromedp.WaitVisible(css(`tr[data-name="ui/job"][data-held="true"]`)),
		chromedp.WaitVisible(css(`tr[data-name="ui/busy"][data-held="true"] ol.queue li`)),
		shot("1-held-and-queued.png"),
	)
	holder := text(`tr[data-name="ui/job"]`)
	if !strings.Contains(holder, "sleep 300") {
		t.Errorf("ui/job's row %q does not show the command seqd lock runs", holder)
	}
	if n := countNodes(t, bctx, `button.break`); n != 0 {
		t.Fatalf("%d break buttons before the admin token was entered", n)
	}

	// Release: seqd lock's command ends, it releases; the page shows the
	// lock free.
	syscall.Kill(-job.Process.Pid, syscall.SIGTERM)
	select {
	case <-jobDone:
	case <-time.After(30 * time.Second):
		t.Fatal("seqd lock did not end after SIGTERM")
	}
	released := time.Now()
	run("see ui/job free", chromedp.WaitVisible(css(`tr[data-name="ui/job"][data-held="false"]`)))
	took := time.Since(released)
	t.Logf("the page showed ui/job free %v after seqd lock exited", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("the page showed the release after %v, want within a second or so", took)
	}

	// Break ui/busy's lease with the admin token and a reason.
	run("break ui/busy",
		chromedp.SendKeys(css(`#admin-token`), adminTok),
		chromedp.WaitVisible(css(`button.break[data-name="ui/busy"]`)),
		// A click in one evaluation: the page may redraw the row between a
		// node lookup and a click by node.
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`document.querySelector('button.break[data-name="ui/busy"]').click() === undefined`)(ctx, tg)
			return err
		}),
		chromedp.WaitVisible(css(`#break-dialog[open]`)),
		chromedp.SendKeys(css(`#break-reason`), "batch-7 hung; ticket 4711"),
		shot("2-break-dialog.png"),
		chromedp.Click(css(`#break-confirm`)),
		chromedp.WaitVisible(css(`tr[data-name="ui/busy"][data-held="true"]:not([data-token="`+itoa(busy.Token)+`"])`)),
		shot("3-after-break.png"),
		chromedp.EmulateViewport(390, 844),
		shot("4-phone.png"),
	)
	msg := text(`#msg`)
	if !strings.Contains(msg, "Broke ui/busy") || !strings.Contains(msg, "ticket 4711") {
		t.Errorf("after the break the page says %q", msg)
	}
	st, err := cl.Status(ctx, "ui/busy")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || st.Token <= busy.Token || st.Holding[0].Command != "sleep 300" {
		t.Fatalf("after the break ui/busy is %+v: want the queued seqd lock holding with a token above %d", st, busy.Token)
	}
}

func countNodes(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("`+sel+`").length`))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
