// SPDX-License-Identifier: Apache-2.0
//! @file
//! `captured_graph`: a move-only owner of a captured CUDA graph and its instantiation, with a
//! node inventory, kernel and memset parameter updates on the instantiated graph, and
//! whole-graph updates with an opt-in fallback to a new instantiation.
//!
//! Error policy: the class is a template on it, `basic_captured_graph<OnError>`;
//! `captured_graph` is `basic_captured_graph<on_error::throw_exception>` and
//! `captured_graph_expected` returns `cuda::std::expected<T, vyre::error>` from every call.
//! `std::move(g).with_policy<P>()` moves a graph to the other policy at no cost.
//!
//!     auto graph = vyre::graph::captured_graph::capture_on_stream(stream, [&](cudaStream_t s) {
//!       step<<<blocks, 256, 0, s>>>(data, n);
//!       return cudaGetLastError();
//!     });
//!     for (int i = 0; i < rounds; ++i) graph.launch(stream);
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/graph/detail/capture.cuh"
#include "vyre/graph/events.hpp"
#include "vyre/graph/memset_params.hpp"
#include "vyre/graph/node_kind.hpp"

namespace vyre::graph {

//! One node of a captured graph: its CUDA handle, kind and position in `nodes()`.
struct graph_node {
  cudaGraphNode_t handle = nullptr;
  node_kind kind = node_kind::unknown;
  std::size_t index = 0;
};

//! The raw handles a captured graph owns.
struct graph_handles {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

//! Grid, block and dynamic shared memory of a kernel launch.
struct kernel_launch_shape {
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  unsigned int shared_bytes = 0;
};

//! Parameters of a kernel node as CUDA stores them. `args[i]` points at the i-th argument's
//! bytes, owned by the graph node (valid while the captured graph lives and is not updated).
struct kernel_node_params {
  void* function = nullptr;
  kernel_launch_shape shape{};
  void** args = nullptr;
};

//! Options of a capture or instantiation.
struct graph_options {
  //! Receives capture/instantiate/launch/upload/update events (see events.hpp).
  graph_event_hook hook{};
  //! Flags for cudaGraphInstantiate (e.g. cudaGraphInstantiateFlagAutoFreeOnLaunch).
  unsigned long long instantiate_flags = 0;
};

//! What a refused whole-graph update may fall back to. Named constants, not a bool.
enum class update_fallback : std::uint8_t {
  none,           //!< report the refusal; the executable graph stays as it was
  reinstantiate,  //!< instantiate the new graph instead (slower, always works)
};

//! How a whole-graph update was applied.
enum class update_outcome : std::uint8_t { updated_in_place, reinstantiated };

template <class OnError>
class basic_captured_graph;
template <class OnError, class Key, class Hash>
class graph_cache;

//! A captured (not instantiated) graph, move-only. Useful as the input of a whole-graph
//! update, or to instantiate later.
class graph_definition {
 public:
  graph_definition() noexcept = default;
  graph_definition(std::nullptr_t) = delete;
  graph_definition(int) = delete;
  //! Takes ownership of `graph` (destroyed exactly once).
  explicit graph_definition(cudaGraph_t graph) noexcept : graph_(graph) {}
  graph_definition(graph_definition&&) noexcept = default;
  graph_definition& operator=(graph_definition&&) noexcept = default;
  ~graph_definition() {}  // user-provided: keeps nvcc from inferring a host-device destructor

  cudaGraph_t get() const noexcept { return graph_.get(); }
  cudaGraph_t release() noexcept { return graph_.release(); }
  void reset() noexcept { graph_.reset(); }
  explicit operator bool() const noexcept { return static_cast<bool>(graph_); }

  //! Captures `body(stream)` into a new graph (see `basic_captured_graph::capture_on_stream`
  //! for the contract of `body`).
  template <class OnError = on_error::throw_exception, class Body>
  static result_t<OnError, graph_definition> capture_on_stream(cudaStream_t stream, Body&& body);

 private:
  detail::unique_graph graph_;
};

namespace detail {

template <class Arg, class Param>
concept converts_without_narrowing = requires(Arg&& arg) {
  Param{static_cast<Arg&&>(arg)};
};

template <class... Params>
struct param_list {
  template <class... Args>
  static constexpr bool accepts() noexcept {
    if constexpr (sizeof...(Params) != sizeof...(Args)) {
      return false;
    } else {
      return (converts_without_narrowing<Args, Params> && ...);
    }
  }
};

template <class Body>
expected<unique_graph> capture_graph(cudaStream_t stream, Body& body) {
  VYRE_TRY(check_capturable(stream, "captured_graph::capture_on_stream"));
  VYRE_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                "captured_graph::capture_on_stream: cudaStreamBeginCapture");
  VYRE_TRY_ASSIGN(cudaGraph_t graph, finish_capture(stream, true, body, stream));
  return unique_graph(graph);
}

//! Everything a captured graph does, policy-free: every operation returns `expected`.
class graph_core {
 public:
  graph_core() noexcept = default;
  graph_core(graph_core&&) noexcept = default;
  graph_core& operator=(graph_core&& other) noexcept {
    if (this != &other) {
      // Executable first: it was instantiated from the graph.
      exec_ = std::move(other.exec_);
      graph_ = std::move(other.graph_);
      inventory_ = std::move(other.inventory_);
      hook_ = other.hook_;
    }
    return *this;
  }
  ~graph_core() { reset(); }

  static expected<graph_core> instantiate(unique_graph graph,
                                          const graph_options& options) noexcept {
    if (!graph)
      return fail(error(errc::invalid_argument, "captured_graph::instantiate: the graph is null")
                      .fix("capture or build a graph first"));
    cudaGraphExec_t exec = nullptr;
    VYRE_CUDA_TRY(cudaGraphInstantiate(&exec, graph.get(), options.instantiate_flags),
                  "captured_graph: cudaGraphInstantiate");
    unique_exec owned_exec(exec);
    if (!owned_exec)
      return fail(error(errc::cuda_runtime,
                        "captured_graph: cudaGraphInstantiate returned a "
                        "null executable graph")
                      .fix("report this: CUDA instantiated a graph without an executable"));
    VYRE_TRY_ASSIGN(node_inventory inventory, read_inventory(graph.get()));
    graph_core core;
    core.graph_ = std::move(graph);
    core.exec_ = std::move(owned_exec);
    core.inventory_ = std::move(inventory);
    core.hook_ = options.hook;
    core.hook_(graph_event::instantiate);
    return core;
  }

  graph_handles get() const noexcept { return {graph_.get(), exec_.get()}; }
  graph_handles release() noexcept {
    inventory_ = {};
    return {graph_.release(), exec_.release()};
  }
  void reset() noexcept {
    exec_.reset();
    graph_.reset();
    inventory_ = {};
  }
  bool empty() const noexcept { return !exec_; }
  void set_hook(graph_event_hook hook) noexcept { hook_ = hook; }
  graph_event_hook hook() const noexcept { return hook_; }

  expected<void> launch(cudaStream_t stream) const noexcept {
    VYRE_TRY(require_instance("captured_graph::launch"));
    VYRE_CUDA_TRY(cudaGraphLaunch(exec_.get(), stream), "captured_graph::launch: cudaGraphLaunch");
    hook_(graph_event::launch);
    return {};
  }
  expected<void> upload(cudaStream_t stream) const noexcept {
    VYRE_TRY(require_instance("captured_graph::upload"));
    VYRE_CUDA_TRY(cudaGraphUpload(exec_.get(), stream), "captured_graph::upload: cudaGraphUpload");
    hook_(graph_event::upload);
    return {};
  }

  std::size_t node_count() const noexcept { return inventory_.count; }
  expected<graph_node> node(std::size_t index) const noexcept {
    if (index >= inventory_.count)
      return fail(error(errc::out_of_range, "captured_graph::node: index past the last node")
                      .with("index", index)
                      .with("node_count", inventory_.count)
                      .fix("iterate up to node_count()"));
    return graph_node{inventory_.handles[index], inventory_.kinds[index], index};
  }
  expected<std::vector<graph_node>> nodes() const noexcept {
    std::vector<graph_node> list;
    try {
      list.reserve(inventory_.count);
    } catch (const std::bad_alloc&) {
      return fail(error(errc::out_of_memory, "captured_graph::nodes: host allocation failed")
                      .with("node_count", inventory_.count)
                      .with("bytes", inventory_.count * sizeof(graph_node))
                      .fix("free host memory, or walk the graph with node(i)"));
    }
    for (std::size_t i = 0; i < inventory_.count; ++i)
      list.push_back(graph_node{inventory_.handles[i], inventory_.kinds[i], i});
    return list;
  }

  expected<kernel_node_params> kernel_params(const graph_node& node) const noexcept {
    VYRE_TRY(require_node(node, node_kind::kernel, "captured_graph::kernel_params"));
    cudaKernelNodeParams raw{};
    VYRE_CUDA_TRY(cudaGraphKernelNodeGetParams(node.handle, &raw),
                  "captured_graph::kernel_params: cudaGraphKernelNodeGetParams");
    return kernel_node_params{
        raw.func, {raw.gridDim, raw.blockDim, raw.sharedMemBytes}, raw.kernelParams};
  }

  expected<void> set_kernel_params(const graph_node& node,
                                   const kernel_node_params& params) noexcept {
    VYRE_TRY(require_instance("captured_graph::set_kernel_params"));
    VYRE_TRY(require_node(node, node_kind::kernel, "captured_graph::set_kernel_params"));
    if (params.function == nullptr)
      return fail(error(errc::invalid_argument,
                        "captured_graph::set_kernel_params: the kernel "
                        "function is null")
                      .with("node_index", node.index)
                      .fix("start from kernel_params(node) and change only what must change"));
    cudaKernelNodeParams raw{};
    raw.func = params.function;
    raw.gridDim = params.shape.grid;
    raw.blockDim = params.shape.block;
    raw.sharedMemBytes = params.shape.shared_bytes;
    raw.kernelParams = params.args;
    VYRE_CUDA_TRY(cudaGraphExecKernelNodeSetParams(exec_.get(), node.handle, &raw),
                  "captured_graph::set_kernel_params: cudaGraphExecKernelNodeSetParams");
    hook_(graph_event::update);
    return {};
  }

  //! Whether a kernel node's reported function is `kernel` (a host stub; the runtime may
  //! report it as the stub or as the driver's function or kernel handle for it).
  static bool same_function(const void* node_function, const void* kernel) noexcept {
    if (node_function == kernel) return true;
    cudaFunction_t function = nullptr;
    if (cudaGetFuncBySymbol(&function, kernel) == cudaSuccess &&
        node_function == static_cast<const void*>(function))
      return true;
    cudaKernel_t handle = nullptr;
    if (cudaGetKernel(&handle, kernel) == cudaSuccess &&
        node_function == static_cast<const void*>(handle))
      return true;
    (void)cudaGetLastError();
    return false;
  }

  //! The node's captured parameters, checked to run `kernel`.
  expected<kernel_node_params> kernel_params_for(const graph_node& node, const void* kernel,
                                                 const char* context) const noexcept {
    VYRE_TRY_ASSIGN(kernel_node_params params, kernel_params(node));
    if (same_function(params.function, kernel)) return params;
    return fail(error(errc::invalid_argument, context)
                    .about("the node runs a different kernel than the one named")
                    .with("node_index", node.index)
                    .fix("pass the kernel the node was captured with; a kernel node cannot "
                         "change its function in place (re-capture instead)"));
  }

  //! The kernel nodes that run `kernel`, in `nodes()` order.
  expected<std::vector<graph_node>> kernel_nodes(const void* kernel) const noexcept {
    std::vector<graph_node> found;
    for (std::size_t i = 0; i < inventory_.count; ++i) {
      if (inventory_.kinds[i] != node_kind::kernel) continue;
      const graph_node node{inventory_.handles[i], node_kind::kernel, i};
      VYRE_TRY_ASSIGN(const kernel_node_params params, kernel_params(node));
      if (!same_function(params.function, kernel)) continue;
      try {
        found.push_back(node);
      } catch (const std::bad_alloc&) {
        return fail(error(errc::out_of_memory,
                          "captured_graph::kernel_nodes: host allocation "
                          "failed")
                        .with("node_count", inventory_.count)
                        .with("bytes", (found.size() + 1) * sizeof(node))
                        .fix("free host memory"));
      }
    }
    return found;
  }

  expected<memset_params> memset_node_params(const graph_node& node) const noexcept {
    VYRE_TRY(require_node(node, node_kind::memset, "captured_graph::memset_node_params"));
    cudaMemsetParams raw{};
    VYRE_CUDA_TRY(cudaGraphMemsetNodeGetParams(node.handle, &raw),
                  "captured_graph::memset_node_params: cudaGraphMemsetNodeGetParams");
    return memset_params{raw.dst, raw.value, raw.elementSize, raw.width, raw.height, raw.pitch};
  }

  expected<void> set_memset_params(const graph_node& node, const memset_params& next) noexcept {
    VYRE_TRY(require_instance("captured_graph::set_memset_params"));
    VYRE_TRY_ASSIGN(const memset_params captured, memset_node_params(node));
    VYRE_TRY(check_memset_update(captured, next));
    VYRE_TRY(check_same_memory(captured.dst, next.dst, node.index));
    cudaMemsetParams raw{.dst = next.dst,
                         .pitch = next.pitch,
                         .value = next.value,
                         .elementSize = next.element_size,
                         .width = next.width,
                         .height = next.height};
    VYRE_CUDA_TRY(cudaGraphExecMemsetNodeSetParams(exec_.get(), node.handle, &raw),
                  "captured_graph::set_memset_params: cudaGraphExecMemsetNodeSetParams");
    hook_(graph_event::update);
    return {};
  }

  expected<update_outcome> update(unique_graph newer, update_fallback fallback) noexcept {
    VYRE_TRY(require_instance("captured_graph::update"));
    if (!newer)
      return fail(error(errc::invalid_argument, "captured_graph::update: the new graph is null")
                      .fix("capture the new graph first (graph_definition::capture_on_stream)"));
    VYRE_TRY_ASSIGN(node_inventory inventory, read_inventory(newer.get()));
    cudaGraphExecUpdateResultInfo info{};
    const cudaError_t status = cudaGraphExecUpdate(exec_.get(), newer.get(), &info);
    if (status == cudaSuccess) {
      // The executable keeps the identity of the nodes it was instantiated from: per-node
      // setters take those handles, so the original graph stays and `newer` is dropped.
      hook_(graph_event::update);
      return update_outcome::updated_in_place;
    }
    (void)cudaGetLastError();
    if (fallback == update_fallback::reinstantiate) {
      cudaGraphExec_t exec = nullptr;
      VYRE_CUDA_TRY(cudaGraphInstantiate(&exec, newer.get(), 0),
                    "captured_graph::update: cudaGraphInstantiate (fallback)");
      if (exec == nullptr)
        return fail(error(errc::cuda_runtime,
                          "captured_graph::update: cudaGraphInstantiate "
                          "returned a null executable graph")
                        .fix("report this: CUDA instantiated a graph without an executable"));
      exec_.reset(exec);
      graph_ = std::move(newer);
      inventory_ = std::move(inventory);
      hook_(graph_event::reinstantiate);
      return update_outcome::reinstantiated;
    }
    return fail(update_refusal(status, info, inventory));
  }

 private:
  expected<void> require_instance(const char* context) const noexcept {
    if (!exec_)
      return fail(error(errc::invalid_state, context)
                      .about("the captured graph is empty (moved from, released or reset)")
                      .fix("capture a graph before using it"));
    return {};
  }
  expected<void> require_node(const graph_node& node, node_kind wanted,
                              const char* context) const noexcept {
    if (node.index >= inventory_.count || inventory_.handles[node.index] != node.handle)
      return fail(error(errc::invalid_handle, context)
                      .about("the node does not belong to this graph (or the graph was updated "
                             "since it was read)")
                      .with("node_index", node.index)
                      .with("node_count", inventory_.count)
                      .fix("take nodes from this graph's nodes() after its last update"));
    const node_kind actual = inventory_.kinds[node.index];
    if (actual != wanted) return fail(kind_mismatch(context, wanted, actual, node.index));
    return {};
  }
  static expected<void> check_same_memory(const void* captured, const void* next,
                                          std::size_t index) noexcept {
    cudaPointerAttributes before{};
    cudaPointerAttributes after{};
    VYRE_CUDA_TRY(cudaPointerGetAttributes(&before, captured),
                  "captured_graph::set_memset_params: cudaPointerGetAttributes (captured)");
    VYRE_CUDA_TRY(cudaPointerGetAttributes(&after, next),
                  "captured_graph::set_memset_params: cudaPointerGetAttributes (new)");
    if (after.type != before.type || after.device != before.device)
      return fail(error(errc::invalid_argument,
                        "captured_graph::set_memset_params: the new "
                        "destination is not the same kind of memory on "
                        "the same device as the captured one")
                      .with("node_index", index)
                      .with("captured_device", static_cast<std::uint64_t>(before.device))
                      .with("device", static_cast<std::uint64_t>(after.device))
                      .with("memory_type_changed", after.type != before.type ? 1u : 0u)
                      .fix("point the memset at memory allocated like the captured destination "
                           "(same device, same allocator kind)"));
    return {};
  }
  static error update_refusal(cudaError_t status, const cudaGraphExecUpdateResultInfo& info,
                              const node_inventory& inventory) noexcept {
    std::uint64_t index = inventory.count;  // "no node" unless CUDA names one
    node_kind kind = node_kind::unknown;
    for (std::size_t i = 0; i < inventory.count; ++i) {
      if (inventory.handles[i] == info.errorNode) {
        index = i;
        kind = inventory.kinds[i];
      }
    }
    char text[error::subject_capacity];
    std::size_t length = 0;
    auto put = [&](const char* part) {
      while (*part != '\0' && length < sizeof(text)) text[length++] = *part++;
    };
    put(update_result_name(static_cast<int>(info.result)));
    if (info.errorNode != nullptr) {
      put("; failing node: ");
      put(node_kind_name(kind));
    }
    return cuda_error(status, "captured_graph::update: cudaGraphExecUpdate refused the new graph")
        .about(text, length)
        .with("reason", static_cast<std::uint64_t>(info.result))
        .with("failing_node_index", index)
        .with("node_count", inventory.count)
        .fix(
            "keep the topology and node kinds of the captured graph, or pass "
            "update_fallback::reinstantiate");
  }

  // Destroyed in reverse order: the executable before the graph it came from.
  unique_graph graph_;
  unique_exec exec_;
  node_inventory inventory_;
  graph_event_hook hook_{};
};

}  // namespace detail

//! Move-only owner of a captured graph and its executable graph; see the file comment. All
//! calls report failures through `OnError` (`result_t<OnError, T>`).
//! @note Like CUDA's graph objects, one captured graph must not be used from several threads
//!       at once (launches included); give each thread its own, or guard it.
template <class OnError = on_error::throw_exception>
class basic_captured_graph {
  static_assert(on_error::policy<OnError>,
                "vyre::graph::basic_captured_graph: OnError must be "
                "vyre::on_error::throw_exception or vyre::on_error::return_expected");

 public:
  using error_policy = OnError;
  template <class T>
  using result = result_t<OnError, T>;

  //! An empty graph (nothing to launch); `capture_on_stream` makes a real one.
  basic_captured_graph() noexcept = default;
  basic_captured_graph(std::nullptr_t) = delete;
  basic_captured_graph(int) = delete;
  basic_captured_graph(basic_captured_graph&&) noexcept = default;
  basic_captured_graph& operator=(basic_captured_graph&&) noexcept = default;
  basic_captured_graph(const basic_captured_graph&) = delete;
  basic_captured_graph& operator=(const basic_captured_graph&) = delete;
  // User-provided (not defaulted): nvcc would otherwise infer a __host__ __device__
  // destructor from cuda::std::expected's and warn that it calls host code.
  ~basic_captured_graph() {}

  //! Captures `body(stream)` in thread-local capture mode and instantiates the result.
  //!
  //! `body` enqueues work on `stream` and returns `void`, `cudaError_t` or
  //! `vyre::expected<void>`. Whatever it does (returns an error, throws, or invalidates the
  //! capture with a call that cannot be captured), the capture is ended on this thread, every
  //! partial object is destroyed and the stream is usable afterwards. An exception from `body`
  //! is rethrown after that cleanup, under either policy.
  //! @pre `stream` is a created stream (not the legacy default stream 0) that is not capturing.
  //! @throws vyre::error_exception under `throw_exception` for any failure above.
  template <class Body>
  static result<basic_captured_graph> capture_on_stream(cudaStream_t stream, Body&& body,
                                                        const graph_options& options = {}) {
    return apply_error_policy<OnError>(capture_internal(stream, body, options));
  }

  //! Instantiates a graph captured earlier (the definition is consumed).
  static result<basic_captured_graph> instantiate(graph_definition&& definition,
                                                  const graph_options& options = {}) {
    return apply_error_policy<OnError>(
        wrap(detail::graph_core::instantiate(detail::unique_graph(definition.release()), options)));
  }

  //! Takes ownership of a graph built elsewhere and instantiates it.
  static result<basic_captured_graph> adopt(cudaGraph_t graph, const graph_options& options = {}) {
    return apply_error_policy<OnError>(
        wrap(detail::graph_core::instantiate(detail::unique_graph(graph), options)));
  }

  //! The same graph under another error policy (moves; this one becomes empty).
  template <class OtherPolicy>
  basic_captured_graph<OtherPolicy> with_policy() && noexcept {
    basic_captured_graph<OtherPolicy> other;
    other.core_ = std::move(core_);
    return other;
  }

  //! Launches the executable graph on `stream`.
  result<void> launch(cudaStream_t stream) const {
    return apply_error_policy<OnError>(core_.launch(stream));
  }
  //! Uploads the executable graph ahead of its first launch (moves setup off the first launch).
  result<void> upload(cudaStream_t stream) const {
    return apply_error_policy<OnError>(core_.upload(stream));
  }

  graph_handles get() const noexcept { return core_.get(); }
  //! Gives up ownership: the caller destroys both handles (the executable first).
  graph_handles release() noexcept { return core_.release(); }
  //! Destroys the executable graph and the graph (once); the object becomes empty.
  void reset() noexcept { core_.reset(); }
  bool empty() const noexcept { return core_.empty(); }
  explicit operator bool() const noexcept { return !core_.empty(); }
  void set_event_hook(graph_event_hook hook) noexcept { core_.set_hook(hook); }

  //! Number of top-level nodes (child graph and conditional bodies count as one node each).
  std::size_t node_count() const noexcept { return core_.node_count(); }
  //! The top-level nodes in CUDA's order (`cudaGraphGetNodes`).
  result<std::vector<graph_node>> nodes() const {
    return apply_error_policy<OnError>(core_.nodes());
  }
  //! Node `index` of `nodes()`.
  result<graph_node> node(std::size_t index) const {
    return apply_error_policy<OnError>(core_.node(index));
  }

  //! A kernel node's parameters, read from the captured graph (not from the executable graph:
  //! in-place updates, per node or whole graph, are not reflected here).
  //! @throws vyre::error_exception naming both kinds when `node` is not a kernel node.
  result<kernel_node_params> kernel_params(const graph_node& node) const {
    return apply_error_policy<OnError>(core_.kernel_params(node));
  }
  //! The kernel nodes that run `kernel` (a `__global__` function), in `nodes()` order: the
  //! way to find the node a typed setter should change.
  template <class... Params>
  result<std::vector<graph_node>> kernel_nodes(void (*kernel)(Params...)) const {
    return apply_error_policy<OnError>(core_.kernel_nodes(reinterpret_cast<const void*>(kernel)));
  }
  //! Sets a kernel node's parameters on the executable graph (untyped: `params.args` must
  //! match the kernel's signature; prefer `set_kernel_args`). CUDA copies the arguments.
  result<void> set_kernel_params(const graph_node& node, const kernel_node_params& params) {
    return apply_error_policy<OnError>(core_.set_kernel_params(node, params));
  }

  //! Typed update of a kernel node's arguments on the executable graph, keeping its launch
  //! shape. The argument count and types are checked at compile time against `kernel`'s
  //! signature (each argument must convert to its parameter without narrowing: write `5u` for
  //! an unsigned parameter); at run time the node must run `kernel`.
  template <class... Params, class... Args>
  result<void> set_kernel_args(const graph_node& node, void (*kernel)(Params...), Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args),
                  "captured_graph::set_kernel_args: the number of arguments must match the "
                  "kernel's parameter count");
    static_assert(detail::param_list<Params...>::template accepts<Args...>(),
                  "captured_graph::set_kernel_args: each argument must convert to the kernel's "
                  "parameter type without narrowing");
    return apply_error_policy<OnError>(
        set_typed(node, nullptr, kernel, std::forward<Args>(args)...));
  }
  //! As `set_kernel_args`, also setting the grid, block and dynamic shared memory.
  template <class... Params, class... Args>
  result<void> set_kernel_launch(const graph_node& node, const kernel_launch_shape& shape,
                                 void (*kernel)(Params...), Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args),
                  "captured_graph::set_kernel_launch: the number of arguments must match the "
                  "kernel's parameter count");
    static_assert(detail::param_list<Params...>::template accepts<Args...>(),
                  "captured_graph::set_kernel_launch: each argument must convert to the "
                  "kernel's parameter type without narrowing");
    return apply_error_policy<OnError>(
        set_typed(node, &shape, kernel, std::forward<Args>(args)...));
  }

  //! A memset node's parameters, read from the captured graph.
  result<memset_params> memset_node_params(const graph_node& node) const {
    return apply_error_policy<OnError>(core_.memset_node_params(node));
  }
  //! Sets a memset node's destination, value and width on the executable graph. CUDA's rules
  //! are checked first: 1-D, non-zero width, element size 1/2/4 and unchanged, value fits the
  //! element, destination on the same device and of the same memory kind as the captured one.
  result<void> set_memset_params(const graph_node& node, const memset_params& params) {
    return apply_error_policy<OnError>(core_.set_memset_params(node, params));
  }

  //! Whole-graph update: makes the executable graph run `newer` (same topology, new
  //! parameters) with `cudaGraphExecUpdate`; `newer` is consumed.
  //! - `updated_in_place`: like the per-node setters, only the executable graph changed. The
  //!   nodes keep their identity (handles from `nodes()` stay valid for the setters) and the
  //!   readers (`kernel_params`, ...) still describe the graph as captured.
  //! - refused: the error names CUDA's reason and the failing node's index in `newer`
  //!   (`failing_node_index`, equal to `node_count` when CUDA names none); this graph is
  //!   unchanged and still launches.
  //! - `reinstantiated` (only with `update_fallback::reinstantiate`): `newer` replaced both the
  //!   graph and the executable; read `nodes()` again.
  result<update_outcome> update(graph_definition&& newer,
                                update_fallback fallback = update_fallback::none) {
    return apply_error_policy<OnError>(
        core_.update(detail::unique_graph(newer.release()), fallback));
  }
  //! Captures `body(stream)` again and applies it with `update` (the usual way to move a
  //! pipeline to new pointers and sizes).
  template <class Body>
  result<update_outcome> recapture(cudaStream_t stream, Body&& body,
                                   update_fallback fallback = update_fallback::none) {
    auto run = [&]() -> expected<update_outcome> {
      VYRE_TRY_ASSIGN(detail::unique_graph graph, detail::capture_graph(stream, body));
      core_.hook()(graph_event::capture);
      return core_.update(std::move(graph), fallback);
    };
    return apply_error_policy<OnError>(run());
  }

 private:
  template <class>
  friend class basic_captured_graph;
  template <class, class, class>
  friend class graph_cache;

  static expected<basic_captured_graph> wrap(expected<detail::graph_core>&& core) noexcept {
    if (!core) return fail(core.error());
    basic_captured_graph graph;
    graph.core_ = std::move(*core);
    return graph;
  }

  template <class Body>
  static expected<basic_captured_graph> capture_internal(cudaStream_t stream, Body& body,
                                                         const graph_options& options) {
    VYRE_TRY_ASSIGN(detail::unique_graph graph, detail::capture_graph(stream, body));
    options.hook(graph_event::capture);
    return wrap(detail::graph_core::instantiate(std::move(graph), options));
  }

  template <class... Params, class... Args>
  expected<void> set_typed(const graph_node& node, const kernel_launch_shape* shape,
                           void (*kernel)(Params...), Args&&... args) {
    VYRE_TRY_ASSIGN(kernel_node_params params,
                    core_.kernel_params_for(node, reinterpret_cast<const void*>(kernel),
                                            "captured_graph::set_kernel_args"));
    // The converted values live here until CUDA has copied them.
    std::tuple<std::remove_cv_t<Params>...> values{
        std::remove_cv_t<Params>{std::forward<Args>(args)}...};
    void* pointers[sizeof...(Params) == 0 ? 1 : sizeof...(Params)] = {};
    std::apply(
        [&](auto&... value) {
          [[maybe_unused]] std::size_t i = 0;
          ((pointers[i++] = static_cast<void*>(&value)), ...);
        },
        values);
    params.args = pointers;
    // The host stub is what the runtime API accepts, whatever form the node reported.
    params.function = reinterpret_cast<void*>(kernel);
    if (shape != nullptr) params.shape = *shape;
    return core_.set_kernel_params(node, params);
  }

  detail::graph_core core_;
};

//! Throws `vyre::error_exception` on failure.
using captured_graph = basic_captured_graph<on_error::throw_exception>;
//! Returns `cuda::std::expected<T, vyre::error>` from every call.
using captured_graph_expected = basic_captured_graph<on_error::return_expected>;

template <class OnError, class Body>
result_t<OnError, graph_definition> graph_definition::capture_on_stream(cudaStream_t stream,
                                                                        Body&& body) {
  auto run = [&]() -> expected<graph_definition> {
    VYRE_TRY_ASSIGN(detail::unique_graph graph, detail::capture_graph(stream, body));
    return graph_definition(graph.release());
  };
  return apply_error_policy<OnError>(run());
}

//! `captured_graph::capture_on_stream` as a free function, the policy first:
//! `capture_on_stream<vyre::on_error::return_expected>(stream, body)`.
template <class OnError = on_error::throw_exception, class Body>
result_t<OnError, basic_captured_graph<OnError>> capture_on_stream(
    cudaStream_t stream, Body&& body, const graph_options& options = {}) {
  return basic_captured_graph<OnError>::capture_on_stream(stream, std::forward<Body>(body),
                                                          options);
}

}  // namespace vyre::graph
