// SPDX-License-Identifier: Apache-2.0
// vyre::eqsat::to_loaded_egraph: a saturated database's e-graph in memory equals what vyre's
// JSON loader reads from egraph_json's text of it (every node's op, cost, e-class and
// children's e-classes by name, and the roots), and vyre::algorithms' tree extraction on it
// gives the costs the session's own extract prints.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include <vyre/algorithms/cpu_engine.hpp>
#include <vyre/egraph/pack.hpp>
#include <vyre/eqsat/emit.hpp>
#include <vyre/eqsat/session.hpp>
#include <vyre/io/egraph_json.hpp>

namespace eq = vyre::eqsat;

namespace {

using node_names = std::tuple<std::string, double, std::string, std::vector<std::string>>;

//! Node id -> (op, cost, e-class, the children's e-classes), all by name.
std::map<std::string, node_names> by_name(const vyre::io::loaded_egraph& g) {
  std::map<std::string, node_names> out;
  const auto rows = g.graph.rows();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::vector<std::string> children;
    for (const std::uint32_t c : g.graph.children_of(rows[i]))
      children.emplace_back(g.eclass_ids[c]);
    out.emplace(std::string(g.node_ids[i]),
                node_names{std::string(g.graph.op_name(rows[i].op)), g.node_costs[i],
                           std::string(g.eclass_ids[rows[i].eclass]), std::move(children)});
  }
  return out;
}

std::vector<std::string> root_names(const vyre::io::loaded_egraph& g) {
  std::vector<std::string> out;
  for (const std::uint32_t r : g.root_eclasses) out.emplace_back(g.eclass_ids[r]);
  return out;
}

}  // namespace

TEST_CASE("eqsat: to_loaded_egraph is egraph_json's e-graph, and vyre::algorithms extracts it",
          "[eqsat][emit]") {
  // Constructors with costs, primitive leaves, a container of primitives and two globals.
  const std::string program = R"((sort IVec (Vec i64))
(datatype M (Add M M) (Mul M M :cost 3) (Num i64) (V String) (Pack IVec))
(rewrite (Add a b) (Add b a))
(rewrite (Mul a (Num 2)) (Add a a))
(rewrite (Add (Pack v) a) (Pack (vec-push v 7)))
(let $e (Mul (Add (V "x") (Num 1)) (Num 2)))
(let $s (Add (Pack (vec-of 1 2)) (V "y")))
(run 4))";
  eq::session s;
  REQUIRE(s.run_text(program, "t.egg"));
  std::vector<eq::value> roots;
  for (const char* name : {"$e", "$s"}) {
    const std::optional<eq::value> v = s.global(name);
    REQUIRE(v.has_value());
    roots.push_back(*v);
  }

  auto memory = eq::to_loaded_egraph(s.decl(), s.db(), roots);
  REQUIRE(memory);
  auto json = vyre::io::parse_egraph_json<vyre::on_error::return_expected>(
      eq::egraph_json(s.decl(), s.db(), roots));
  REQUIRE(json);
  CHECK(memory->graph.rows().size() == json->graph.rows().size());
  CHECK(memory->graph.rows().size() > 10);  // the rewrites grew it
  CHECK(by_name(*memory) == by_name(*json));
  CHECK(root_names(*memory) == root_names(*json));
  CHECK(root_names(*memory).size() == 2);

  // vyre::algorithms' tree extraction on the in-memory e-graph against the session's extract.
  auto image = vyre::egraph::pack<vyre::on_error::return_expected>(memory->graph);
  REQUIRE(image);
  auto tree = vyre::algorithms::cpu_engine::extract(image->columns(), memory->node_costs,
                                                    memory->root_eclasses, 1);
  REQUIRE(tree);
  REQUIRE(s.run_text("(extract $e)\n(extract $s)", "t.egg"));
  const auto& outputs = s.outputs();
  REQUIRE(outputs.size() >= 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const std::uint32_t root = memory->root_eclasses[i];
    const auto at = std::lower_bound(tree->eclass_ids.begin(), tree->eclass_ids.end(), root);
    REQUIRE(at != tree->eclass_ids.end());
    REQUIRE(*at == root);
    const double cost = tree->cost[static_cast<std::size_t>(at - tree->eclass_ids.begin())];
    INFO("root " << i << ": " << outputs[outputs.size() - 2 + i].text);
    CHECK(cost == static_cast<double>(outputs[outputs.size() - 2 + i].cost));
  }
}
