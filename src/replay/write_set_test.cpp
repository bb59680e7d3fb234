// Pins write_set.hpp: extents, the chunk layout, and what a prediction gives after learning.
#include "replay/write_set.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace kreplay::replay {
namespace {

constexpr uint64_t kChunk = 1024;

Region region(uint64_t id, uint64_t base, uint64_t size) {
  Region r;
  r.id = id;
  r.base = base;
  r.size = size;
  return r;
}

std::vector<std::byte> args_of(std::initializer_list<uint64_t> words) {
  std::vector<std::byte> a(words.size() * 8);
  size_t i = 0;
  for (uint64_t w : words) std::memcpy(a.data() + 8 * i++, &w, 8);
  return a;
}

TEST(Extents, NormalizeMergesTouchingAndDropsEmpty) {
  std::vector<Extent> e{{30, 40}, {10, 20}, {20, 25}, {50, 50}, {35, 45}};
  normalize(&e);
  EXPECT_EQ(e, (std::vector<Extent>{{10, 25}, {30, 45}}));
  EXPECT_EQ(extent_bytes(e), 30u);
}

TEST(Extents, CoversNeedsEveryByteInside) {
  const std::vector<Extent> outer{{0, 100}, {200, 300}};
  EXPECT_TRUE(covers(outer, std::vector<Extent>{{10, 20}, {250, 300}}));
  EXPECT_FALSE(covers(outer, std::vector<Extent>{{90, 110}}));  // runs past the end
  EXPECT_FALSE(covers(outer, std::vector<Extent>{{150, 160}}));  // between
  EXPECT_TRUE(covers(outer, std::vector<Extent>{}));
}

TEST(ChunkLayout, NumbersChunksPerRegionAndMapsThemBack) {
  // Two regions; the second ends in a partial chunk.
  ChunkLayout l({region(1, 0x10000, 4 * kChunk), region(2, 0x20000, 2 * kChunk + 100)}, kChunk);
  EXPECT_EQ(l.total_chunks(), 4u + 3u);
  EXPECT_EQ(l.copies()[1].first_chunk, 4u);
  const std::vector<uint64_t> chunks{1, 2, 3, 4, 6};
  // Chunks 3 and 4 touch in numbering but lie in different regions: not merged.
  EXPECT_EQ(l.extents_of(chunks),
            (std::vector<Extent>{{0x10000 + kChunk, 0x10000 + 4 * kChunk},
                                 {0x20000, 0x20000 + kChunk},
                                 {0x20000 + 2 * kChunk, 0x20000 + 2 * kChunk + 100}}));
}

TEST(ChunkLayout, ToChunksWidensCutsAndTakesTheNextChunk) {
  ChunkLayout l({region(1, 0x10000, 4 * kChunk), region(2, 0x20000, 2 * kChunk + 100)}, kChunk);
  const std::vector<Extent> raw{{0x10000 + 10, 0x10000 + 20},   // inside chunk 0
                                {0x1F000, 0x20010},             // mostly outside, then region 2
                                {0x90000, 0x90010}};            // in no region
  EXPECT_EQ(l.to_chunks(raw),
            (std::vector<Extent>{{0x10000, 0x10000 + kChunk}, {0x20000, 0x20000 + kChunk}}));
  EXPECT_EQ(l.to_chunks(raw, /*next_chunk=*/true),
            (std::vector<Extent>{{0x10000, 0x10000 + 2 * kChunk},
                                 {0x20000, 0x20000 + 2 * kChunk}}));
  // The next chunk never leaves the region.
  EXPECT_EQ(l.to_chunks(std::vector<Extent>{{0x20000 + 2 * kChunk, 0x20000 + 2 * kChunk + 1}}, true),
            (std::vector<Extent>{{0x20000 + 2 * kChunk, 0x20000 + 2 * kChunk + 100}}));
}

TEST(WriteSets, NothingIsPredictedBeforeALaunchWasLearned) {
  WriteSets ws;
  ChunkLayout l({region(1, 0x100000, 64 * kChunk)}, kChunk);
  EXPECT_FALSE(ws.predict(7, args_of({0x100000}), l).has_value());
}

TEST(WriteSets, SameArgumentsPredictWhatTheLastLaunchesWrote) {
  WriteSets ws;
  ChunkLayout l({region(1, 0x100000, 64 * kChunk)}, kChunk);
  const auto a = args_of({0x100000 + 8 * kChunk, 42});
  ws.learn(7, a, std::vector<Extent>{{0x100000 + 8 * kChunk, 0x100000 + 10 * kChunk}}, l);
  auto p = ws.predict(7, a, l);
  ASSERT_TRUE(p.has_value());
  // What it wrote, plus the chunk after.
  EXPECT_EQ(*p, (std::vector<Extent>{{0x100000 + 8 * kChunk, 0x100000 + 11 * kChunk}}));
  // A second launch of the same arguments that wrote elsewhere: the union of both is predicted.
  ws.learn(7, a, std::vector<Extent>{{0x100000 + 30 * kChunk, 0x100000 + 31 * kChunk}}, l);
  EXPECT_EQ(*ws.predict(7, a, l),
            (std::vector<Extent>{{0x100000 + 8 * kChunk, 0x100000 + 11 * kChunk},
                                 {0x100000 + 30 * kChunk, 0x100000 + 32 * kChunk}}));
  // Only the last WriteSets::kHistory launches count.
  ws.learn(7, a, std::vector<Extent>{{0x100000 + 40 * kChunk, 0x100000 + 41 * kChunk}}, l);
  EXPECT_EQ(*ws.predict(7, a, l),
            (std::vector<Extent>{{0x100000 + 30 * kChunk, 0x100000 + 32 * kChunk},
                                 {0x100000 + 40 * kChunk, 0x100000 + 42 * kChunk}}));
}

TEST(WriteSets, OtherArgumentsAreTranslatedThroughThePointersTheyHold) {
  // One arena; the kernel writes 2 chunks starting 1 chunk past its output pointer (word 1).
  WriteSets ws;
  const uint64_t arena = 0x1000000;
  ChunkLayout l({region(1, arena, 1024 * kChunk)}, kChunk);
  const auto layer1 = args_of({arena, arena + 100 * kChunk, 5});
  ws.learn(9, layer1, std::vector<Extent>{{arena + 101 * kChunk, arena + 103 * kChunk}}, l);
  const auto layer2 = args_of({arena, arena + 500 * kChunk, 5});
  auto p = ws.predict(9, layer2, l);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, (std::vector<Extent>{{arena + 501 * kChunk, arena + 504 * kChunk}}));
}

TEST(WriteSets, TheSameShapeOnOtherBuffersIsPredictedFromItsOwnLastLaunch) {
  // One elementwise kernel used for two shapes (n = 5 chunks and n = 1 chunk): a launch of the
  // first shape on new buffers is predicted from the last launch of that shape, not from the
  // kernel's latest launch (the other shape, which writes less).
  WriteSets ws;
  const uint64_t arena = 0x1000000;
  ChunkLayout l({region(1, arena, 1024 * kChunk)}, kChunk);
  ws.learn(4, args_of({arena + 10 * kChunk, 5 * kChunk}),
           std::vector<Extent>{{arena + 10 * kChunk, arena + 15 * kChunk}}, l);
  ws.learn(4, args_of({arena + 40 * kChunk, kChunk}),
           std::vector<Extent>{{arena + 40 * kChunk, arena + 41 * kChunk}}, l);
  EXPECT_EQ(*ws.predict(4, args_of({arena + 200 * kChunk, 5 * kChunk}), l),
            (std::vector<Extent>{{arena + 200 * kChunk, arena + 206 * kChunk}}));
  // A shape never seen: the kernel's latest launch, translated.
  EXPECT_EQ(*ws.predict(4, args_of({arena + 300 * kChunk, 2 * kChunk}), l),
            (std::vector<Extent>{{arena + 300 * kChunk, arena + 302 * kChunk}}));
}

TEST(WriteSets, ExactOnlyPredictsFromTheseVeryArgumentsAlone) {
  // What range replay asks of a launch joining a write-bounded range: did a range open with this
  // launch before? The same shape on other buffers, or the kernel's latest launch, does not count.
  WriteSets ws;
  const uint64_t arena = 0x1000000;
  ChunkLayout l({region(1, arena, 1024 * kChunk)}, kChunk);
  const auto seen = args_of({arena + 10 * kChunk, 5 * kChunk});
  ws.learn(4, seen, std::vector<Extent>{{arena + 10 * kChunk, arena + 15 * kChunk}}, l);
  EXPECT_EQ(*ws.predict(4, seen, l, /*exact_only=*/true),
            (std::vector<Extent>{{arena + 10 * kChunk, arena + 16 * kChunk}}));
  const auto same_shape = args_of({arena + 200 * kChunk, 5 * kChunk});
  EXPECT_TRUE(ws.predict(4, same_shape, l).has_value());
  EXPECT_FALSE(ws.predict(4, same_shape, l, /*exact_only=*/true).has_value());
  const auto other_shape = args_of({arena + 300 * kChunk, 2 * kChunk});
  EXPECT_TRUE(ws.predict(4, other_shape, l).has_value());
  EXPECT_FALSE(ws.predict(4, other_shape, l, /*exact_only=*/true).has_value());
}

TEST(WriteSets, WritesNoArgumentPointsAtAreKeptAbsolute) {
  WriteSets ws;
  ChunkLayout l({region(1, 0x100000, 64 * kChunk), region(2, 0x900000, 64 * kChunk)}, kChunk);
  const auto a = args_of({0x100000});
  ws.learn(3, a, std::vector<Extent>{{0x900000 + 4 * kChunk, 0x900000 + 5 * kChunk}}, l);
  const auto b = args_of({0x100000 + 16 * kChunk});
  EXPECT_EQ(*ws.predict(3, b, l),
            (std::vector<Extent>{{0x900000 + 4 * kChunk, 0x900000 + 6 * kChunk}}));
}

TEST(WriteSets, AFreedRegionPredictsNothingThere) {
  WriteSets ws;
  ChunkLayout before({region(1, 0x100000, 64 * kChunk), region(2, 0x900000, 64 * kChunk)}, kChunk);
  const auto a = args_of({0x100000});
  ws.learn(3, a, std::vector<Extent>{{0x900000, 0x900000 + kChunk}}, before);
  ChunkLayout after({region(1, 0x100000, 64 * kChunk)}, kChunk);
  auto p = ws.predict(3, a, after);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->empty());
}

TEST(WriteSets, KeysAreBounded) {
  WriteSets ws;
  ChunkLayout l({region(1, 0x100000, 64 * kChunk)}, kChunk);
  for (uint64_t step = 0; step < WriteSets::kMaxExactKeys + 10; ++step)
    ws.learn(1, args_of({0x100000, step}), std::vector<Extent>{{0x100000, 0x100000 + kChunk}}, l);
  EXPECT_EQ(ws.exact_keys(), WriteSets::kMaxExactKeys);
  // A step never seen: predicted from the kernel's latest launch.
  EXPECT_TRUE(ws.predict(1, args_of({0x100000, 999999}), l).has_value());
}

}  // namespace
}  // namespace kreplay::replay
