package podannotation

import "testing"

func TestIsolated(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		labels      map[string]string
		want        bool
		err         bool
	}{
		"None":             {},
		"OursTrue":         {annotations: map[string]string{AnnotationIsolated: "true"}, want: true},
		"OursFalse":        {annotations: map[string]string{AnnotationIsolated: "false"}},
		"OursSpaced":       {annotations: map[string]string{AnnotationIsolated: " True "}, want: true},
		"OursInvalid":      {annotations: map[string]string{AnnotationIsolated: "yes"}, err: true},
		"TKEFalse":         {annotations: map[string]string{TKEAnnotationEnableMapping: "false"}, want: true},
		"TKEFalseCase":     {annotations: map[string]string{TKEAnnotationEnableMapping: "False"}, want: true},
		"TKETrue":          {annotations: map[string]string{TKEAnnotationEnableMapping: "true"}},
		"TKEOther":         {annotations: map[string]string{TKEAnnotationEnableMapping: "off"}},
		"OKGTrue":          {labels: map[string]string{OKGLabelNetworkDisabled: "true"}, want: true},
		"OKGFalse":         {labels: map[string]string{OKGLabelNetworkDisabled: "false"}},
		"OKGAsAnnotation":  {annotations: map[string]string{OKGLabelNetworkDisabled: "true"}},
		"OursWinsOverTKE":  {annotations: map[string]string{AnnotationIsolated: "false", TKEAnnotationEnableMapping: "false"}},
		"OursWinsOverOKG":  {annotations: map[string]string{AnnotationIsolated: "false"}, labels: map[string]string{OKGLabelNetworkDisabled: "true"}},
		"TKEEnabledOKGOff": {annotations: map[string]string{TKEAnnotationEnableMapping: "true"}, labels: map[string]string{OKGLabelNetworkDisabled: "true"}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := pod(tc.annotations)
			p.Labels = tc.labels
			got, err := Isolated(p)
			if (err != nil) != tc.err {
				t.Fatalf("Isolated(): error %v, want error %v", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("Isolated() = %v, want %v", got, tc.want)
			}
		})
	}
}
