package corpus

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// A counter-data file of one segment with two functions, in the ULEB
// flavor: the units whose counters are not zero are named.
func TestCoveredUnits(t *testing.T) {
	data := make([]byte, covHeaderLen)
	copy(data, covMagic)
	binary.LittleEndian.PutUint32(data[4:], covFileVersion)
	data[24] = covFlavorULeb
	seg := make([]byte, covSegHeadLen)
	binary.LittleEndian.PutUint64(seg, 2) // functions
	data = append(data, seg...)
	// function 1 of package 0: counters 0, 5, 0; function 2 of package 3:
	// one counter of 300 (two ULEB bytes).
	data = append(data, 3, 0, 1, 0, 5, 0)
	data = append(data, 1, 3, 2, 0xac, 0x02)
	for len(data)%4 != 0 {
		data = append(data, 0)
	}
	footer := make([]byte, covFooterLen)
	binary.LittleEndian.PutUint32(footer[8:], 1) // segments
	data = append(data, footer...)
	units, err := coveredUnits(data)
	require.NoError(t, err)
	require.Equal(t, []string{"cov:0:1:1", "cov:3:2:0"}, units)

	_, err = coveredUnits([]byte("not coverage at all, long enough to have a header...."))
	require.ErrorContains(t, err, "not a counter-data file")
}
