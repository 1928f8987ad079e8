// Package deploy holds no code: it is the home of the deployment files (the
// Prometheus config and alert rules, the Kubernetes sidecar example) and of
// the tests that check them, together with the repository's Dockerfile and
// docker-compose.yml, with the same tools CI has (promtool, docker-compose).
package deploy
