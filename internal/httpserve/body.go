package httpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// What every request goes through before its handler: its body must keep
// up with the minimum rate, and a priority request's connection is
// protected from the cap once its body has arrived.

type connKey struct{}

// withConn puts the connection into its requests' contexts.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// serve wraps h: the body of r is read at opts' minimum rate, a priority
// request is protected once its body has arrived, and the connection is
// kept afterwards if opts.Keep says so.
func serve(h http.Handler, t *tracker, opts Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		protect := func() {}
		if c != nil && opts.Priority != nil && opts.Priority(r) {
			protect = func() { t.protect(c) }
			defer t.unprotect(c)
		}
		if c != nil && opts.Keep != nil {
			sw := &statusWriter{ResponseWriter: w}
			w = sw
			defer func() {
				if opts.Keep(r, sw.status) {
					t.earn(c)
				}
			}()
		}
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			protect()
		} else {
			r.Body = &paced{
				ReadCloser: r.Body,
				rc:         http.NewResponseController(w),
				start:      time.Now(),
				rate:       opts.MinBodyRate,
				grace:      opts.BodyGrace,
				end:        time.Now().Add(opts.ReadTimeout),
				length:     r.ContentLength,
				arrived:    protect,
			}
		}
		h.ServeHTTP(w, r)
	})
}

// ErrBodyTooSlow is the error of a body read cut for falling behind the
// minimum rate.
var ErrBodyTooSlow = errors.New("the request body arrived too slowly")

// paced is a request body that must keep up with a minimum rate: byte n
// must have arrived grace + n/rate after the handler began. It sets the
// connection's read deadline before each read of the connection, and no
// more once the body has ended: the server then reads the connection in
// the background, with no deadline, to notice a client that goes away.
type paced struct {
	io.ReadCloser
	rc      *http.ResponseController
	start   time.Time
	rate    int
	grace   time.Duration
	end     time.Time // the whole request's deadline
	length  int64     // -1: unknown (chunked)
	read    int64
	done    bool
	arrived func() // called once, when the body has ended
}

func (p *paced) Read(b []byte) (int, error) {
	if p.done {
		return p.ReadCloser.Read(b)
	}
	due := p.start.Add(p.grace + time.Duration(float64(p.read)/float64(p.rate)*float64(time.Second)))
	if due.After(p.end) {
		due = p.end
	}
	p.rc.SetReadDeadline(due)
	n, err := p.ReadCloser.Read(b)
	p.read += int64(n)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		p.done = true
		return n, fmt.Errorf("%w: %d bytes in %v, less than %d bytes a second after the first %v", ErrBodyTooSlow, p.read, time.Since(p.start).Round(time.Millisecond), p.rate, p.grace)
	case err == io.EOF || (err == nil && p.length >= 0 && p.read >= p.length):
		p.done = true
		p.arrived()
	case err != nil:
		p.done = true
	}
	return n, err
}

// statusWriter remembers the status of the answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
