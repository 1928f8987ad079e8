package httpapi

import (
	_ "embed"
	"net/http"

	"github.com/seqd/seqd/api"
)

// The status page: one HTML file with its styles and script inline (no
// external assets), served at /ui/. The page itself holds no data, so it
// is served without a token; everything it shows it reads from /v1/ with
// the bearer token its user enters, as any other client.

//go:embed ui/index.html
var uiPage []byte

// UIPageSize is the status page's size in bytes.
var UIPageSize = len(uiPage)

func serveUI(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ui" {
		http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
		return
	}
	if r.URL.Path != "/ui/" {
		writeError(w, http.StatusNotFound, api.ErrorBody{Error: "no such page: the status page is /ui/", Code: api.CodeNotFound})
		return
	}
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// Nothing but this page's own inline script and style, and calls to
	// this origin.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(uiPage)
	}
}
