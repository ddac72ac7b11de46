// fuzz_regions: bytes -> a region section (the RGNS section of a cache entry),
// read by regions::ParseRegions, which checks every op, operand, slot and count
// against the op table before the executor may run it. Torch-free: only
// ppy_regions_core is linked.
//
// Beyond "never crash": what ParseRegions accepts must pass VerifyRegion again,
// must print (`ppy dis`: DescribeRegion), and must serialize to bytes that read
// back to the same regions (the serialized form of a parsed section is a fixed
// point of serialize(parse(.))).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "regions/region_code.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "\nppy fuzz: BUG: %s: %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  namespace regions = ppy::regions;
  std::string_view data(reinterpret_cast<const char*>(bytes), size);
  ppy::StatusOr<std::vector<regions::RegionCode>> parsed = regions::ParseRegions(data);
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) Fail("a rejected region section without a message", "");
    return 0;
  }
  for (const regions::RegionCode& region : *parsed) {
    ppy::Status verified = regions::VerifyRegion(region);
    if (!verified.ok()) Fail("ParseRegions accepted a region VerifyRegion rejects", verified.message());
    std::string listing = regions::DescribeRegion(region);
    if (listing.empty()) Fail("an empty region listing", region.name);
  }
  std::string once = regions::SerializeRegions(*parsed);
  ppy::StatusOr<std::vector<regions::RegionCode>> again = regions::ParseRegions(once);
  if (!again.ok()) Fail("a serialized region section does not read back", again.status().message());
  if (regions::SerializeRegions(*again) != once) Fail("serialize(parse(serialize(parse(x)))) differs", "");
  return 0;
}
