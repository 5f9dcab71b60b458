package emulator

import (
	"strconv"
	"strings"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

// Availability zones are synthetic: "<region>-<n>" with n in 1..9, and a
// numeric id of a per-region base plus n (ap-guangzhou-3 is 100003, as on
// the real cloud).

func zoneBase(region string) uint64 {
	switch region {
	case "ap-guangzhou":
		return 100000
	case "ap-shanghai":
		return 200000
	case "ap-hongkong":
		return 300000
	case "ap-beijing":
		return 800000
	case "ap-singapore":
		return 900000
	case "ap-chengdu":
		return 160000
	case "ap-chongqing":
		return 170000
	case "ap-nanjing":
		return 330000
	}
	return 990000
}

func defaultZone(region string) string {
	if region == "ap-guangzhou" {
		return region + "-3"
	}
	return region + "-1"
}

// normalizeZone accepts a zone name or numeric id and returns the name.
func normalizeZone(region, in string) (string, bool) {
	if in == "" {
		return defaultZone(region), true
	}
	if n, err := strconv.ParseUint(in, 10, 64); err == nil {
		idx := n - zoneBase(region)
		if n > zoneBase(region) && idx <= 9 {
			return region + "-" + strconv.FormatUint(idx, 10), true
		}
		return "", false
	}
	suffix, ok := strings.CutPrefix(in, region+"-")
	if !ok || len(suffix) != 1 || suffix[0] < '1' || suffix[0] > '9' {
		return "", false
	}
	return in, true
}

func zoneID(region, zone string) uint64 {
	n, _ := strconv.ParseUint(strings.TrimPrefix(zone, region+"-"), 10, 64)
	return zoneBase(region) + n
}

func zoneInfo(region, zone string) *clb.ZoneInfo {
	city := region
	if i := strings.IndexByte(region, '-'); i >= 0 {
		city = region[i+1:]
	}
	if city != "" {
		city = strings.ToUpper(city[:1]) + city[1:]
	}
	return &clb.ZoneInfo{
		ZoneId:     ptr(zoneID(region, zone)),
		Zone:       ptr(zone),
		ZoneName:   ptr(city + " Zone " + strings.TrimPrefix(zone, region+"-")),
		ZoneRegion: ptr(region),
		LocalZone:  ptr(false),
		EdgeZone:   ptr(false),
	}
}

// regionShort is the region tag used inside load balancer domains.
func regionShort(region string) string {
	switch region {
	case "ap-guangzhou":
		return "gz"
	case "ap-shanghai":
		return "sh"
	case "ap-beijing":
		return "bj"
	case "ap-chengdu":
		return "cd"
	case "ap-chongqing":
		return "cq"
	case "ap-nanjing":
		return "nj"
	case "ap-hongkong":
		return "hk"
	case "ap-singapore":
		return "sg"
	}
	return region
}
