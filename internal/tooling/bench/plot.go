package bench

import (
	"fmt"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot sizes: small PNGs (tens of KiB) that read well on a page.
const (
	plotWidth  = 6 * vg.Inch
	plotHeight = 3.5 * vg.Inch
)

// Plots draws the bind-latency CDF of every run and the cloud calls per
// second of every bind and delete into dir, and returns the file names.
func Plots(r *Results, dir string) ([]string, error) {
	var names []string
	cdf := plot.New()
	cdf.Title.Text = "Pod IP → address published (CDF)"
	cdf.X.Label.Text = "seconds"
	cdf.Y.Label.Text = "share of Pods"
	cdf.X.Min, cdf.Y.Min, cdf.Y.Max = 0, 0, 1
	bind, del := callsPlot("cloud calls per second, creating the Pods"), callsPlot("cloud calls per second, deleting the Pods")
	i := 0
	for _, s := range r.Systems {
		for _, run := range s.Runs {
			if run.Bind == nil {
				continue
			}
			label := run.Mode
			if len(r.Systems) > 1 {
				label = s.Name + " " + run.Mode
			}
			if err := addLine(cdf, label, i, cdfPoints(run.Bind.Latencies)); err != nil {
				return nil, err
			}
			if err := addLine(bind, label, i, perSecond(run.Bind.CallsPerSecond)); err != nil {
				return nil, err
			}
			if run.Delete != nil {
				if err := addLine(del, label, i, perSecond(run.Delete.CallsPerSecond)); err != nil {
					return nil, err
				}
			}
			i++
		}
	}
	for name, p := range map[string]*plot.Plot{"bind-latency-cdf.png": cdf, "calls-per-second-bind.png": bind, "calls-per-second-delete.png": del} {
		if err := p.Save(plotWidth, plotHeight, filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("cannot save %s: %w", name, err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

func callsPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "calls"
	p.X.Min, p.Y.Min = 0, 0
	return p
}

func addLine(p *plot.Plot, label string, i int, pts plotter.XYs) error {
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	l.Dashes = plotutil.Dashes(i)
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

// cdfPoints are the empirical CDF of latencies in milliseconds.
func cdfPoints(ms []int) plotter.XYs {
	s := slices.Clone(ms)
	slices.Sort(s)
	pts := make(plotter.XYs, len(s))
	for i, v := range s {
		pts[i] = plotter.XY{X: float64(v) / 1000, Y: float64(i+1) / float64(len(s))}
	}
	return pts
}

func perSecond(n []int) plotter.XYs {
	pts := make(plotter.XYs, len(n))
	for i, v := range n {
		pts[i] = plotter.XY{X: float64(i + 1), Y: float64(v)}
	}
	return pts
}
