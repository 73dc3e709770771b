# SPDX-License-Identifier: Apache-2.0
# Compile-time fusion plans that cannot be built: the compiler's message must name the reason.
vyre_compile_fail(fusion_zero_budget fusion_zero_budget.cpp
  "fusion_budget_is_zero_pass_a_budget_above_zero")
vyre_compile_fail(fusion_duplicate_stage_id fusion_duplicate_stage_id.cpp
  "duplicate_stage_id_give_every_stage_a_unique_id")
vyre_compile_fail(fusion_stage_over_budget fusion_stage_over_budget.cpp
  "stage_needs_more_bytes_than_the_budget_raise_it_or_split_the_stage")
vyre_compile_fail(fusion_stage_bytes_overflow fusion_stage_bytes_overflow.cpp
  "stage_bytes_overflow_u64_input_plus_output_plus_scratch")
# One nvcc case (they are expensive): a fused pipeline needs one functor per planned stage.
vyre_compile_fail(fusion_pipeline_functor_count fusion_pipeline_functor_count.cu
  "pass exactly one stage functor per stage of the plan")
