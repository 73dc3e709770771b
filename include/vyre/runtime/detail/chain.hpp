// SPDX-License-Identifier: Apache-2.0
//! @file
//! `delete_chain`: frees a singly linked chain of heap nodes, for the destructors of the
//! lock-free structures that link what they allocate (`block_index` tables, telemetry slots).
#pragma once

namespace vyre::detail {

//! Deletes `head` and every node after it along `link` (each allocated with `new`).
template <class Node>
void delete_chain(Node* head, Node* Node::*link) noexcept {
  while (head != nullptr) {
    Node* next = head->*link;
    delete head;
    head = next;
  }
}

}  // namespace vyre::detail
