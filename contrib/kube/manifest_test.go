package kube_test

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

const manifest = "../../deploy/k8s/controller-leader-election.yaml"

// TestManifestIsValidKubernetes decodes the example manifest strictly, as
// the API server's own types (a misspelt or misplaced field is an error),
// and checks what the Lock needs of the pod: the controller reads its
// identity from the downward API and reaches its seqd sidecar on loopback.
// The control: a field the types do not have is refused.
func TestManifestIsValidKubernetes(t *testing.T) {
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	decode := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer().Decode
	var dep *appsv1.Deployment
	var cm *corev1.ConfigMap
	for i, doc := range strings.Split(string(b), "\n---\n") {
		obj, _, err := decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s: document %d: %v", manifest, i, err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			dep = o
		case *corev1.ConfigMap:
			cm = o
		default:
			t.Errorf("%s: document %d is a %T", manifest, i, obj)
		}
	}
	if dep == nil || cm == nil {
		t.Fatalf("%s: want a ConfigMap and a Deployment", manifest)
	}
	if cm.Data["SEQD_LISTEN"] != "127.0.0.1:7070" {
		t.Errorf("the sidecar listens on %q, want loopback 127.0.0.1:7070", cm.Data["SEQD_LISTEN"])
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
		t.Errorf("replicas %v: an election of one candidate", dep.Spec.Replicas)
	}
	var controller, sidecar *corev1.Container
	for i := range dep.Spec.Template.Spec.Containers {
		switch c := &dep.Spec.Template.Spec.Containers[i]; c.Name {
		case "controller":
			controller = c
		case "seqd":
			sidecar = c
		}
	}
	if controller == nil || sidecar == nil {
		t.Fatal("want the containers controller and seqd")
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range controller.Env {
		env[e.Name] = e
	}
	if e := env["POD_NAME"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("the controller's POD_NAME is %+v, want the pod's name from the downward API", e)
	}
	if e := env["SEQD_ADDR"]; e.Value != "http://"+cm.Data["SEQD_LISTEN"] {
		t.Errorf("the controller's SEQD_ADDR is %q, want its sidecar http://%s", e.Value, cm.Data["SEQD_LISTEN"])
	}
	if len(sidecar.EnvFrom) != 1 || sidecar.EnvFrom[0].ConfigMapRef == nil || sidecar.EnvFrom[0].ConfigMapRef.Name != cm.Name {
		t.Errorf("the sidecar's envFrom %+v, want the ConfigMap %s", sidecar.EnvFrom, cm.Name)
	}

	bad := strings.Replace(string(b), "terminationGracePeriodSeconds:", "terminationGraceSeconds:", 1)
	for _, doc := range strings.Split(bad, "\n---\n") {
		if strings.Contains(doc, "terminationGraceSeconds") {
			if _, _, err := decode([]byte(doc), nil, nil); err == nil {
				t.Error("control: a Deployment with an unknown field decoded without error")
			}
		}
	}
}
