// SPDX-License-Identifier: Apache-2.0
// Generated stage lists (deterministic seeds): the invariants of every plan, greedy's defining
// property, the optimal mode against brute force, and the compile-time (fixed) and run-time
// paths giving identical plans.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <vyre/detail/split_mix.hpp>
#include <vyre/fusion.hpp>

namespace {

using vyre::fusion::group;
using vyre::fusion::materialization;
using vyre::fusion::plan_mode;
using vyre::fusion::stage;

// The library's splitmix64 (the same sequence on every platform and standard library), drawn
// modulo the bound.
struct splitmix64 {
  vyre::detail::split_mix mix;
  std::uint64_t below(std::uint64_t bound) noexcept { return mix.next() % bound; }
};

constexpr std::size_t max_generated_stages = 14;

struct generated {
  std::vector<stage> stages;
  std::uint64_t budget = 0;
};

// Lists that plan without error: unique ids in scrambled order, each stage within the budget,
// mostly one layout (so fusion is possible) and a few host boundaries.
generated generate(std::uint64_t seed) {
  splitmix64 rng{seed};
  generated out;
  out.budget = 64 + rng.below(512);
  const std::size_t count = rng.below(max_generated_stages + 1);
  for (std::size_t i = 0; i < count; ++i) {
    stage s;
    s.id = static_cast<std::uint32_t>((i * 2654435761u + seed) & 0xFFFFFFFFu);
    s.layout_hash = rng.below(8) == 0 ? 2 : 1;
    s.boundary = rng.below(10) == 0 ? materialization::host : materialization::none;
    const std::uint64_t share = out.budget / (1 + rng.below(4));
    s.input_bytes = rng.below(share / 2 + 1);
    s.output_bytes = rng.below(share / 3 + 1);
    s.scratch_bytes = rng.below(share - s.input_bytes - s.output_bytes + 1);
    out.stages.push_back(s);
  }
  return out;
}

std::uint64_t group_required(std::span<const stage> stages, std::size_t first, std::size_t count) {
  std::uint64_t required =
      stages[first].input_bytes + stages[first].output_bytes + stages[first].scratch_bytes;
  for (std::size_t k = first + 1; k < first + count; ++k)
    required += stages[k].output_bytes + stages[k].scratch_bytes;
  return required;
}

bool valid_group(std::span<const stage> stages, std::size_t first, std::size_t count,
                 std::uint64_t budget) {
  for (std::size_t k = first + 1; k < first + count; ++k)
    if (stages[k].layout_hash != stages[first].layout_hash ||
        stages[k].boundary == materialization::host)
      return false;
  return group_required(stages, first, count) <= budget;
}

// Every plan: order kept, groups tile the list, counts agree, groups obey the join rules.
void check_invariants(std::span<const stage> stages, std::uint64_t budget,
                      const vyre::fusion::plan& plan) {
  REQUIRE(plan.stage_count() == stages.size());
  for (std::size_t i = 0; i < stages.size(); ++i) REQUIRE(plan.stage_ids()[i] == stages[i].id);
  REQUIRE(plan.launch_count() == plan.groups().size());
  REQUIRE(plan.avoided_launches() == stages.size() - plan.groups().size());
  std::size_t next = 0;
  std::uint64_t avoided = 0;
  for (const group& g : plan.groups()) {
    REQUIRE(g.first_stage == next);
    REQUIRE(g.stage_count >= 1);
    REQUIRE(valid_group(stages, g.first_stage, g.stage_count, budget));
    REQUIRE(g.required_bytes == group_required(stages, g.first_stage, g.stage_count));
    REQUIRE(g.required_bytes <= budget);
    REQUIRE(g.layout_hash == stages[g.first_stage].layout_hash);
    std::uint64_t group_avoided = 0;
    for (std::size_t k = g.first_stage; k + 1 < g.first_stage + g.stage_count; ++k)
      group_avoided += stages[k].output_bytes;
    REQUIRE(g.avoided_bytes == group_avoided);
    const auto ids = plan.stage_ids(g);
    REQUIRE(ids.size() == g.stage_count);
    REQUIRE(ids[0] == stages[g.first_stage].id);
    avoided += group_avoided;
    next += g.stage_count;
  }
  REQUIRE(next == stages.size());
  REQUIRE(plan.avoided_bytes() == avoided);
}

// Fewest launches, then most avoided bytes, over all 2^(n-1) ways to cut the list.
std::pair<std::size_t, std::uint64_t> brute_force_best(std::span<const stage> stages,
                                                       std::uint64_t budget) {
  const std::size_t n = stages.size();
  if (n == 0) return {0, 0};
  std::pair<std::size_t, std::uint64_t> best{n + 1, 0};
  for (std::uint64_t cuts = 0; cuts < (std::uint64_t{1} << (n - 1)); ++cuts) {
    std::size_t groups = 0;
    std::uint64_t avoided = 0;
    bool ok = true;
    std::size_t first = 0;
    for (std::size_t end = 1; end <= n && ok; ++end) {
      if (end == n || ((cuts >> (end - 1)) & 1u) != 0) {
        ok = valid_group(stages, first, end - first, budget);
        for (std::size_t k = first; k + 1 < end; ++k) avoided += stages[k].output_bytes;
        ++groups;
        first = end;
      }
    }
    if (ok && (groups < best.first || (groups == best.first && avoided > best.second)))
      best = {groups, avoided};
  }
  return best;
}

// The fixed-capacity (constexpr) path, run at run time for a list of any generated length.
template <std::size_t N>
vyre::expected<vyre::fusion::fixed_plan<N>> fixed_plan_of(std::span<const stage> stages,
                                                          std::uint64_t budget, plan_mode mode) {
  std::array<stage, N> array{};
  for (std::size_t i = 0; i < N; ++i) array[i] = stages[i];
  return vyre::fusion::plan_launch_fusion(array, budget, mode);
}

template <std::size_t... Ns>
bool fixed_path_agrees(std::span<const stage> stages, std::uint64_t budget, plan_mode mode,
                       const vyre::fusion::plan& runtime, std::index_sequence<Ns...>) {
  bool agrees = false;
  ((stages.size() == Ns ? (void)(agrees =
                                     [&] {
                                       const auto fixed = fixed_plan_of<Ns>(stages, budget, mode);
                                       return fixed.has_value() &&
                                              vyre::fusion::same_plan(*fixed, runtime);
                                     }())
                        : void()),
   ...);
  return agrees;
}

std::string describe(std::span<const stage> stages, std::uint64_t budget) {
  std::string text =
      "budget=" + std::to_string(budget) + " stages (id layout in out scratch host):";
  for (const stage& s : stages)
    text += " [" + std::to_string(s.id) + " " + std::to_string(s.layout_hash) + " " +
            std::to_string(s.input_bytes) + " " + std::to_string(s.output_bytes) + " " +
            std::to_string(s.scratch_bytes) +
            (s.boundary == materialization::host ? " host]" : "]");
  return text;
}

}  // namespace

TEST_CASE("generated stage lists: invariants, greedy maximality, optimal = brute force",
          "[fusion][property]") {
  constexpr std::uint64_t list_count = 4000;
  vyre::fusion::plan_workspace workspace;
  vyre::fusion::plan greedy;
  vyre::fusion::plan optimal;
  std::size_t greedy_more_launches = 0;
  std::size_t greedy_fewer_avoided = 0;
  std::size_t nonempty = 0;
  std::string first_more_launches;
  std::string first_fewer_avoided;
  for (std::uint64_t seed = 1; seed <= list_count; ++seed) {
    const generated input = generate(seed);
    const std::span<const stage> stages = input.stages;
    INFO("seed " << seed << ": " << describe(stages, input.budget));
    REQUIRE(vyre::fusion::plan_launch_fusion(stages, input.budget, workspace, greedy));
    REQUIRE(vyre::fusion::plan_launch_fusion(stages, input.budget, workspace, optimal,
                                             plan_mode::optimal));
    check_invariants(stages, input.budget, greedy);
    check_invariants(stages, input.budget, optimal);
    nonempty += stages.empty() ? 0 : 1;

    // Greedy's definition: the first stage of each group could not have joined the one before.
    for (std::size_t g = 1; g < greedy.groups().size(); ++g) {
      const group& before = greedy.groups()[g - 1];
      REQUIRE_FALSE(valid_group(stages, before.first_stage, before.stage_count + 1, input.budget));
    }

    // Optimal: never worse than greedy, and exactly the best cover.
    REQUIRE(optimal.launch_count() <= greedy.launch_count());
    if (optimal.launch_count() == greedy.launch_count())
      REQUIRE(optimal.avoided_bytes() >= greedy.avoided_bytes());
    const auto best = brute_force_best(stages, input.budget);
    REQUIRE(optimal.launch_count() == best.first);
    REQUIRE(optimal.avoided_bytes() == best.second);
    if (greedy.launch_count() > optimal.launch_count()) {
      if (greedy_more_launches++ == 0) first_more_launches = describe(stages, input.budget);
    } else if (greedy.avoided_bytes() < optimal.avoided_bytes()) {
      if (greedy_fewer_avoided++ == 0) first_fewer_avoided = describe(stages, input.budget);
    }

    // The fixed-capacity path (what a constant expression runs) gives the identical plan.
    REQUIRE(fixed_path_agrees(stages, input.budget, plan_mode::greedy, greedy,
                              std::make_index_sequence<max_generated_stages + 1>{}));
    REQUIRE(fixed_path_agrees(stages, input.budget, plan_mode::optimal, optimal,
                              std::make_index_sequence<max_generated_stages + 1>{}));
  }
  // The generator must exercise what it claims to.
  CHECK(nonempty > list_count * 9 / 10);
  CHECK(greedy_more_launches > 0);
  CHECK(greedy_fewer_avoided > 0);
  WARN("greedy needed more launches than optimal on "
       << greedy_more_launches << " of " << list_count << " lists; first: " << first_more_launches);
  WARN("equal launches but fewer avoided bytes on " << greedy_fewer_avoided
                                                    << " lists; first: " << first_fewer_avoided);
}

TEST_CASE("long generated lists: run-time plans keep every invariant", "[fusion][property]") {
  vyre::fusion::plan_workspace workspace;
  vyre::fusion::plan greedy;
  vyre::fusion::plan optimal;
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    splitmix64 rng{seed * 7919};
    std::vector<stage> stages;
    const std::uint64_t budget = 1000;
    const std::size_t count = 200 + rng.below(800);
    for (std::uint32_t i = 0; i < count; ++i)
      stages.push_back(
          {.id = i * 7u + 3u,
           .layout_hash = rng.below(20) == 0 ? 9u : 4u,
           .input_bytes = rng.below(300),
           .output_bytes = rng.below(200),
           .scratch_bytes = rng.below(100),
           .boundary = rng.below(50) == 0 ? materialization::host : materialization::none});
    REQUIRE(vyre::fusion::plan_launch_fusion(stages, budget, workspace, greedy));
    REQUIRE(
        vyre::fusion::plan_launch_fusion(stages, budget, workspace, optimal, plan_mode::optimal));
    check_invariants(stages, budget, greedy);
    check_invariants(stages, budget, optimal);
    REQUIRE(optimal.launch_count() <= greedy.launch_count());
    if (optimal.launch_count() == greedy.launch_count())
      REQUIRE(optimal.avoided_bytes() >= greedy.avoided_bytes());
  }
}
