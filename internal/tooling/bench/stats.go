package bench

import (
	"math"
	"slices"
)

// Percentile is the nearest-rank percentile p (0-100) of values: the
// smallest value at or above which p % of them lie. Zero for none.
func Percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}
