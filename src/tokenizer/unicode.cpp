// UTF-8 helpers, code point flags and the GPT-2 byte map (see unicode.h).
#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>

#include "core/utf8.h"

namespace lazyslot::unicode {

uint32_t DecodeOne(std::string_view text, size_t* pos) {
  const size_t i = *pos;
  const size_t n = text.size();
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const auto cont = [&](size_t k) { return k < n && (byte(k) & 0xC0) == 0x80; };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) {
    *pos = i + 1;
    return b0;
  }
  if ((b0 & 0xE0) == 0xC0 && cont(i + 1)) {
    *pos = i + 2;
    return (uint32_t(b0 & 0x1F) << 6) | (byte(i + 1) & 0x3F);
  }
  if ((b0 & 0xF0) == 0xE0 && cont(i + 1) && cont(i + 2)) {
    *pos = i + 3;
    return (uint32_t(b0 & 0x0F) << 12) | (uint32_t(byte(i + 1) & 0x3F) << 6) | (byte(i + 2) & 0x3F);
  }
  if ((b0 & 0xF8) == 0xF0 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
    const uint32_t cp = (uint32_t(b0 & 0x07) << 18) | (uint32_t(byte(i + 1) & 0x3F) << 12) |
                        (uint32_t(byte(i + 2) & 0x3F) << 6) | (byte(i + 3) & 0x3F);
    if (cp <= kMaxCodePoint) {
      *pos = i + 4;
      return cp;
    }
  }
  *pos = i + 1;
  return kReplacement;
}

std::vector<uint32_t> Decode(std::string_view text) {
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) cps.push_back(DecodeOne(text, &pos));
  return cps;
}

namespace {

// One flag byte per code point (1.1 MB), expanded once from the generated runs: splitting looks up every
// code point of the input, so a direct index beats a binary search over ~2200 runs.
const std::vector<uint8_t>& FlagTable() {
  static const std::vector<uint8_t> table = [] {
    std::vector<uint8_t> t(kMaxCodePoint + 1, kFlagAny);
    for (size_t r = 0; r < kCategoryRunCount; ++r) {
      const uint32_t first = kCategoryRuns[r].first;
      const uint32_t end = r + 1 < kCategoryRunCount ? kCategoryRuns[r + 1].first : kMaxCodePoint + 1;
      uint8_t f = kFlagAny;
      switch (kCategoryRuns[r].category) {
        case kLetter:
          f |= kFlagLetter;
          break;
        case kNumber:
          f |= kFlagNumber;
          break;
        case kPunct:
          f |= kFlagPunct;
          break;
        case kUnassigned:
          f |= kFlagUnassigned;
          break;
        case kOther:
          break;
      }
      std::fill(t.begin() + first, t.begin() + end, f);
    }
    for (size_t i = 0; i < kWhiteSpaceCount; ++i) t[kWhiteSpace[i]] |= kFlagWhite;
    return t;
  }();
  return table;
}

struct ByteMap {
  std::array<uint32_t, 256> to_cp;
  std::array<int16_t, 0x144> from_cp;  // images are all below U+0144
};

const ByteMap& GetByteMap() {
  static const ByteMap map = [] {
    ByteMap m;
    m.from_cp.fill(-1);
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      m.to_cp[b] = printable ? uint32_t(b) : next++;
      m.from_cp[m.to_cp[b]] = static_cast<int16_t>(b);
    }
    return m;
  }();
  return map;
}

}  // namespace

uint8_t Flags(uint32_t cp) { return cp <= kMaxCodePoint ? FlagTable()[cp] : uint8_t{kFlagAny}; }

UnicodeCategory Category(uint32_t cp) {
  const uint8_t f = Flags(cp);
  if (f & kFlagLetter) return kLetter;
  if (f & kFlagNumber) return kNumber;
  if (f & kFlagPunct) return kPunct;
  if (f & kFlagUnassigned) return kUnassigned;
  return kOther;
}

uint32_t ByteToCodePoint(uint8_t b) { return GetByteMap().to_cp[b]; }

int CodePointToByte(uint32_t cp) { return cp < 0x144 ? GetByteMap().from_cp[cp] : -1; }

void AppendByteEncoded(std::string_view bytes, std::string* out) {
  const ByteMap& m = GetByteMap();
  for (char c : bytes) AppendUtf8(m.to_cp[static_cast<uint8_t>(c)], out);
}

bool IsWhiteSpace(uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return std::binary_search(kWhiteSpace, kWhiteSpace + kWhiteSpaceCount, cp);
}

WpmClass WpmClassOf(uint32_t cp) {
  if (cp > kMaxCodePoint) return kWpmKeep;
  // Last run starting at or before cp (the first run starts at 0).
  const WpmClassRun* end = kWpmClassRuns + kWpmClassRunCount;
  const WpmClassRun* it =
      std::upper_bound(kWpmClassRuns, end, cp, [](uint32_t c, const WpmClassRun& r) { return c < r.first; });
  return (it - 1)->cls;
}

uint32_t NfdFirst(uint32_t cp) {
  if (cp < 0xC0) return cp;  // nothing below U+00C0 decomposes
  const NfdFirstRange* end = kNfdFirstRanges + kNfdFirstRangeCount;
  const NfdFirstRange* it = std::upper_bound(kNfdFirstRanges, end, cp,
                                             [](uint32_t c, const NfdFirstRange& r) { return c < r.first; });
  if (it == kNfdFirstRanges) return cp;
  --it;
  return cp <= it->last ? it->value : cp;
}

uint32_t ToLower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  const CasePair* end = kLowerCasePairs + kLowerCasePairCount;
  const CasePair* it =
      std::lower_bound(kLowerCasePairs, end, cp, [](const CasePair& p, uint32_t c) { return p.from < c; });
  return it != end && it->from == cp ? it->to : cp;
}

bool IsCjkIdeograph(uint32_t cp) {
  // CJK Unified Ideographs, Extension A, B, C, D, E-F (from U+2B920, as Hugging Face's code has it, not
  // U+2B820), Compatibility Ideographs and their Supplement.
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

}  // namespace lazyslot::unicode
