// The opcode loop of the pickle parser (see pickle.h). Each opcode's operands are bounds
// checked against the input; container sizes are bounded by the input (every element costs
// at least one opcode); limits come from PickleOptions.
#include "pickle.h"

#include <cstring>
#include <unordered_set>

#include "pickle_machine.h"
#include "strict_json.h"

namespace longrun::convert {

PNode* PickleDoc::make(PKind kind) {
  arena_.push_back(std::make_unique<PNode>());
  arena_.back()->kind = kind;
  return arena_.back().get();
}

Status PickleMachine::error(const std::string& what) const {
  char op[16];
  if (op_ >= 0x20 && op_ < 0x7f)
    std::snprintf(op, sizeof op, "'%c'", char(op_));
  else
    std::snprintf(op, sizeof op, "0x%02x", unsigned(op_));
  return format_error(label_ + ": pickle byte " + std::to_string(op_pos_) + " (opcode " + op + "): " + what);
}

Status PickleMachine::check_nodes() const {
  if (doc_->arena_.size() > options_.limits.max_nodes)
    return error("more than " + std::to_string(options_.limits.max_nodes) + " values (limit)");
  return {};
}

namespace {

std::string dict_key_identity(const PNode* key, bool lenient) {
  if (key->kind == PKind::string) return "s" + key->text;
  if (key->kind == PKind::integer) return "i" + std::to_string(key->integer);
  if (!lenient) return {};
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%p", static_cast<const void*>(key));
  return buf;
}

}  // namespace

Status PickleMachine::set_item(PNode* dict, PNode* key, PNode* value) {
  if (dict->kind == PKind::opaque) return {};
  if (dict->kind != PKind::dict && dict->kind != PKind::record)
    return error("SETITEM(S) on " + describe(dict) + ", expected a dict");
  std::string id = dict_key_identity(key, options_.lenient);
  if (id.empty()) return error("dict key " + describe(key) + " is not a string or an integer");
  auto [it, inserted] = dict->index.emplace(std::move(id), dict->entries.size());
  if (inserted)
    dict->entries.emplace_back(key, value);
  else
    dict->entries[it->second].second = value;  // Python semantics: the last value wins
  return {};
}

Status PickleMachine::run() {
  const auto* in = reinterpret_cast<const uint8_t*>(data_.data());
  const size_t n = data_.size();
  if (n > options_.limits.max_input_bytes)
    return format_error(label_ + ": pickle of " + std::to_string(n) + " bytes exceeds the limit of " +
                        std::to_string(options_.limits.max_input_bytes));
  uint64_t ops = 0;

  auto need = [&](size_t k) -> Status {
    if (n - pos_ < k)
      return error("truncated operand: needs " + std::to_string(k) + " bytes, " + std::to_string(n - pos_) +
                   " left");
    return {};
  };
  auto le = [&](size_t k) {
    uint64_t v = 0;
    for (size_t i = 0; i < k; ++i) v |= uint64_t(in[pos_ + i]) << (8 * i);
    pos_ += k;
    return v;
  };
  auto push = [&](PNode* v) -> Status {
    if (stack_.size() >= options_.limits.max_stack)
      return error("stack deeper than " + std::to_string(options_.limits.max_stack) + " (limit)");
    stack_.push_back(v);
    return {};
  };
  auto pop = [&](PNode** out) -> Status {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back()))
      return error("stack underflow");
    *out = stack_.back();
    stack_.pop_back();
    return {};
  };
  auto top = [&](PNode** out) -> Status {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back()))
      return error("stack underflow");
    *out = stack_.back();
    return {};
  };
  // Pops everything above the last mark into `items` (and the mark itself).
  auto pop_mark = [&](std::vector<PNode*>* items) -> Status {
    if (marks_.empty()) return error("no MARK on the stack");
    const size_t m = marks_.back();
    marks_.pop_back();
    items->assign(stack_.begin() + std::ptrdiff_t(m), stack_.end());
    stack_.resize(m);
    return {};
  };
  auto text = [&](size_t len, PKind kind, bool utf8) -> Status {
    LR_RETURN_IF_ERROR(need(len));
    PNode* s = make(kind);
    s->text.assign(reinterpret_cast<const char*>(in + pos_), len);
    pos_ += len;
    if (utf8 && json::find_invalid_utf8(s->text) != std::string_view::npos)
      return error("invalid UTF-8 in string");
    return push(s);
  };
  auto memo_put = [&](uint64_t idx) -> Status {
    PNode* v = nullptr;
    LR_RETURN_IF_ERROR(top(&v));
    if (memo_.size() >= options_.limits.max_memo && !memo_.count(idx))
      return error("memo larger than " + std::to_string(options_.limits.max_memo) + " entries (limit)");
    memo_[idx] = v;
    return {};
  };
  auto memo_get = [&](uint64_t idx) -> Status {
    auto it = memo_.find(idx);
    if (it == memo_.end()) return error("memo index " + std::to_string(idx) + " was never stored");
    return push(it->second);
  };
  auto integer = [&](int64_t v) -> Status {
    PNode* i = make(PKind::integer);
    i->integer = v;
    return push(i);
  };
  auto tuple_of = [&](size_t k) -> Status {
    if (stack_.size() < k || (!marks_.empty() && stack_.size() - k < marks_.back()))
      return error("stack underflow");
    PNode* t = make(PKind::tuple);
    t->items.assign(stack_.end() - std::ptrdiff_t(k), stack_.end());
    stack_.resize(stack_.size() - k);
    return push(t);
  };

  std::vector<PNode*> items;
  while (true) {
    if (pos_ >= n)
      return format_error(label_ + ": pickle ends at byte " + std::to_string(n) + " without STOP");
    if (++ops > options_.limits.max_ops)
      return error("more than " + std::to_string(options_.limits.max_ops) + " opcodes (limit)");
    LR_RETURN_IF_ERROR(check_nodes());
    op_pos_ = pos_;
    op_ = in[pos_++];
    switch (op_) {
      case 0x80: {  // PROTO
        LR_RETURN_IF_ERROR(need(1));
        const unsigned v = in[pos_++];
        if (v > 5) return error("unsupported pickle protocol " + std::to_string(v));
        break;
      }
      case 0x95:  // FRAME: a length prefix only; the opcodes inside are read as usual
        LR_RETURN_IF_ERROR(need(8));
        pos_ += 8;
        break;
      case '.': {  // STOP
        PNode* v = nullptr;
        LR_RETURN_IF_ERROR(pop(&v));
        doc_->root_ = v;
        doc_->consumed_ = pos_;
        return {};
      }
      case '(': marks_.push_back(stack_.size()); break;
      case '0': {  // POP
        PNode* v = nullptr;
        LR_RETURN_IF_ERROR(pop(&v));
        break;
      }
      case '1':  // POP_MARK
        LR_RETURN_IF_ERROR(pop_mark(&items));
        break;
      case '2': {  // DUP
        PNode* v = nullptr;
        LR_RETURN_IF_ERROR(top(&v));
        LR_RETURN_IF_ERROR(push(v));
        break;
      }
      case 'N': LR_RETURN_IF_ERROR(push(make(PKind::none))); break;
      case 0x88:
      case 0x89: {  // NEWTRUE / NEWFALSE
        PNode* b = make(PKind::boolean);
        b->boolean = op_ == 0x88;
        LR_RETURN_IF_ERROR(push(b));
        break;
      }
      case 'J':
        LR_RETURN_IF_ERROR(need(4));
        LR_RETURN_IF_ERROR(integer(int32_t(uint32_t(le(4)))));
        break;
      case 'K':
        LR_RETURN_IF_ERROR(need(1));
        LR_RETURN_IF_ERROR(integer(int64_t(le(1))));
        break;
      case 'M':
        LR_RETURN_IF_ERROR(need(2));
        LR_RETURN_IF_ERROR(integer(int64_t(le(2))));
        break;
      case 0x8a:    // LONG1
      case 0x8b: {  // LONG4
        const size_t w = op_ == 0x8a ? 1 : 4;
        LR_RETURN_IF_ERROR(need(w));
        const uint64_t len = le(w);
        if (len > 16) return error("integer of " + std::to_string(len) + " bytes (at most 16 supported)");
        LR_RETURN_IF_ERROR(need(size_t(len)));
        if (len > 8) {
          LR_RETURN_IF_ERROR(text(size_t(len), PKind::bigint, false));
          break;
        }
        uint64_t v = 0;
        for (size_t i = 0; i < len; ++i) v |= uint64_t(in[pos_ + i]) << (8 * i);
        if (len > 0 && len < 8 && (in[pos_ + len - 1] & 0x80)) v |= ~uint64_t(0) << (8 * len);  // sign
        pos_ += size_t(len);
        LR_RETURN_IF_ERROR(integer(int64_t(v)));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        LR_RETURN_IF_ERROR(need(8));
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v = v << 8 | in[pos_ + i];
        pos_ += 8;
        PNode* f = make(PKind::floating);
        std::memcpy(&f->floating, &v, 8);
        LR_RETURN_IF_ERROR(push(f));
        break;
      }
      case 'X':
        LR_RETURN_IF_ERROR(need(4));
        LR_RETURN_IF_ERROR(text(size_t(le(4)), PKind::string, true));
        break;
      case 0x8c:
        LR_RETURN_IF_ERROR(need(1));
        LR_RETURN_IF_ERROR(text(size_t(le(1)), PKind::string, true));
        break;
      case 0x8d: {
        LR_RETURN_IF_ERROR(need(8));
        const uint64_t len = le(8);
        if (len > n - pos_) return error("string of " + std::to_string(len) + " bytes runs past the end");
        LR_RETURN_IF_ERROR(text(size_t(len), PKind::string, true));
        break;
      }
      case 'U':  // SHORT_BINSTRING: Python 2 byte string, kept as text (latin-1 bytes)
        LR_RETURN_IF_ERROR(need(1));
        LR_RETURN_IF_ERROR(text(size_t(le(1)), PKind::string, false));
        break;
      case 'T': {
        LR_RETURN_IF_ERROR(need(4));
        const int32_t len = int32_t(uint32_t(le(4)));
        if (len < 0) return error("negative string length " + std::to_string(len));
        LR_RETURN_IF_ERROR(text(size_t(len), PKind::string, false));
        break;
      }
      case 'C':
        LR_RETURN_IF_ERROR(need(1));
        LR_RETURN_IF_ERROR(text(size_t(le(1)), PKind::bytes, false));
        break;
      case 'B':
        LR_RETURN_IF_ERROR(need(4));
        LR_RETURN_IF_ERROR(text(size_t(le(4)), PKind::bytes, false));
        break;
      case 0x8e: {
        LR_RETURN_IF_ERROR(need(8));
        const uint64_t len = le(8);
        if (len > n - pos_) return error("bytes of " + std::to_string(len) + " bytes run past the end");
        LR_RETURN_IF_ERROR(text(size_t(len), PKind::bytes, false));
        break;
      }
      case ')': LR_RETURN_IF_ERROR(push(make(PKind::tuple))); break;
      case 0x85: LR_RETURN_IF_ERROR(tuple_of(1)); break;
      case 0x86: LR_RETURN_IF_ERROR(tuple_of(2)); break;
      case 0x87: LR_RETURN_IF_ERROR(tuple_of(3)); break;
      case 't': {
        LR_RETURN_IF_ERROR(pop_mark(&items));
        PNode* t = make(PKind::tuple);
        t->items = items;
        LR_RETURN_IF_ERROR(push(t));
        break;
      }
      case ']': LR_RETURN_IF_ERROR(push(make(PKind::list))); break;
      case 'l': {
        LR_RETURN_IF_ERROR(pop_mark(&items));
        PNode* l = make(PKind::list);
        l->items = items;
        LR_RETURN_IF_ERROR(push(l));
        break;
      }
      case 'a': {
        PNode *v = nullptr, *list = nullptr;
        LR_RETURN_IF_ERROR(pop(&v));
        LR_RETURN_IF_ERROR(top(&list));
        if (list->kind == PKind::opaque) break;
        if (list->kind != PKind::list) return error("APPEND to " + describe(list) + ", expected a list");
        list->items.push_back(v);
        break;
      }
      case 'e': {
        LR_RETURN_IF_ERROR(pop_mark(&items));
        PNode* list = nullptr;
        LR_RETURN_IF_ERROR(top(&list));
        if (list->kind == PKind::opaque) break;
        if (list->kind != PKind::list) return error("APPENDS to " + describe(list) + ", expected a list");
        list->items.insert(list->items.end(), items.begin(), items.end());
        break;
      }
      case '}': LR_RETURN_IF_ERROR(push(make(PKind::dict))); break;
      case 'd': {
        LR_RETURN_IF_ERROR(pop_mark(&items));
        if (items.size() % 2) return error("DICT with an odd number of items");
        PNode* d = make(PKind::dict);
        for (size_t i = 0; i < items.size(); i += 2) LR_RETURN_IF_ERROR(set_item(d, items[i], items[i + 1]));
        LR_RETURN_IF_ERROR(push(d));
        break;
      }
      case 's': {
        PNode *v = nullptr, *k = nullptr, *d = nullptr;
        LR_RETURN_IF_ERROR(pop(&v));
        LR_RETURN_IF_ERROR(pop(&k));
        LR_RETURN_IF_ERROR(top(&d));
        LR_RETURN_IF_ERROR(set_item(d, k, v));
        break;
      }
      case 'u': {
        LR_RETURN_IF_ERROR(pop_mark(&items));
        if (items.size() % 2) return error("SETITEMS with an odd number of items");
        PNode* d = nullptr;
        LR_RETURN_IF_ERROR(top(&d));
        for (size_t i = 0; i < items.size(); i += 2) LR_RETURN_IF_ERROR(set_item(d, items[i], items[i + 1]));
        break;
      }
      case 'q':
        LR_RETURN_IF_ERROR(need(1));
        LR_RETURN_IF_ERROR(memo_put(le(1)));
        break;
      case 'r':
        LR_RETURN_IF_ERROR(need(4));
        LR_RETURN_IF_ERROR(memo_put(le(4)));
        break;
      case 0x94: LR_RETURN_IF_ERROR(memo_put(memo_.size())); break;
      case 'h':
        LR_RETURN_IF_ERROR(need(1));
        LR_RETURN_IF_ERROR(memo_get(le(1)));
        break;
      case 'j':
        LR_RETURN_IF_ERROR(need(4));
        LR_RETURN_IF_ERROR(memo_get(le(4)));
        break;
      case 'c': {  // GLOBAL "module\nname\n"
        std::string parts[2];
        for (std::string& part : parts) {
          const size_t limit = std::min(n, pos_ + 257);
          size_t end = pos_;
          while (end < limit && in[end] != '\n') ++end;
          if (end >= limit) return error("GLOBAL name without a newline within 256 bytes");
          part.assign(reinterpret_cast<const char*>(in + pos_), end - pos_);
          pos_ = end + 1;
        }
        LR_ASSIGN_OR_RETURN(PNode * g, resolve_global(parts[0], parts[1]));
        LR_RETURN_IF_ERROR(push(g));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        PNode *name = nullptr, *module = nullptr;
        LR_RETURN_IF_ERROR(pop(&name));
        LR_RETURN_IF_ERROR(pop(&module));
        if (name->kind != PKind::string || module->kind != PKind::string)
          return error("STACK_GLOBAL operands are not strings");
        LR_ASSIGN_OR_RETURN(PNode * g, resolve_global(module->text, name->text));
        LR_RETURN_IF_ERROR(push(g));
        break;
      }
      case 'R': {
        PNode *args = nullptr, *callable = nullptr;
        LR_RETURN_IF_ERROR(pop(&args));
        LR_RETURN_IF_ERROR(pop(&callable));
        LR_ASSIGN_OR_RETURN(PNode * v, reduce(callable, args));
        LR_RETURN_IF_ERROR(push(v));
        break;
      }
      case 0x81: {  // NEWOBJ
        PNode *args = nullptr, *cls = nullptr;
        LR_RETURN_IF_ERROR(pop(&args));
        LR_RETURN_IF_ERROR(pop(&cls));
        LR_ASSIGN_OR_RETURN(PNode * v, newobj(cls, args));
        LR_RETURN_IF_ERROR(push(v));
        break;
      }
      case 'b': {
        PNode *state = nullptr, *obj = nullptr;
        LR_RETURN_IF_ERROR(pop(&state));
        LR_RETURN_IF_ERROR(top(&obj));
        LR_RETURN_IF_ERROR(build(obj, state));
        break;
      }
      case 'Q': {
        PNode* pid = nullptr;
        LR_RETURN_IF_ERROR(pop(&pid));
        LR_ASSIGN_OR_RETURN(PNode * v, persistent_load(pid));
        LR_RETURN_IF_ERROR(push(v));
        break;
      }
      default:
        return error(
            "opcode not supported by the safe parser (text-protocol, INST/OBJ, EXT, sets, buffers "
            "and unknown opcodes are refused)");
    }
  }
}

Result<std::unique_ptr<PickleDoc>> parse_pickle(std::span<const std::byte> data, const PickleOptions& options,
                                                const std::string& label) {
  auto doc = std::make_unique<PickleDoc>();
  PickleMachine m(data, options, label, doc.get());
  LR_RETURN_IF_ERROR(m.run());
  return doc;
}

const PNode* dict_get(const PNode* dict, std::string_view key) {
  if (!dict || dict->kind != PKind::dict) return nullptr;
  auto it = dict->index.find("s" + std::string(key));
  return it == dict->index.end() ? nullptr : dict->entries[it->second].second;
}

std::string find_lenient_value(const PNode* node) {
  std::vector<std::pair<const PNode*, int>> todo = {{node, 0}};
  std::unordered_set<const PNode*> seen;
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    if (!v || !seen.insert(v).second) continue;
    if (depth > kMaxDepth) return "values nested deeper than " + std::to_string(kMaxDepth);
    if (v->kind == PKind::global && v->boolean) return "global '" + v->text + "." + v->name + "'";
    if (v->kind == PKind::opaque) return "object '" + v->text + "'";
    for (const PNode* i : v->items) todo.emplace_back(i, depth + 1);
    for (const auto& [k, child] : v->entries) {
      if (k->kind != PKind::string && k->kind != PKind::integer) return "dict key " + describe(k);
      todo.emplace_back(child, depth + 1);
    }
  }
  return {};
}

std::string describe(const PNode* v) {
  switch (v->kind) {
    case PKind::none: return "None";
    case PKind::boolean: return v->boolean ? "True" : "False";
    case PKind::integer: return "int " + std::to_string(v->integer);
    case PKind::bigint: return "int of " + std::to_string(v->text.size()) + " bytes";
    case PKind::floating: return "float " + std::to_string(v->floating);
    case PKind::string: return "str " + json::quote_for_message(v->text, 60);
    case PKind::bytes: return "bytes[" + std::to_string(v->text.size()) + "]";
    case PKind::tuple: return "tuple[" + std::to_string(v->items.size()) + "]";
    case PKind::list: return "list[" + std::to_string(v->items.size()) + "]";
    case PKind::dict: return "dict[" + std::to_string(v->entries.size()) + "]";
    case PKind::global: return "global " + v->text + "." + v->name;
    case PKind::storage:
      return "storage " + std::string(source_dtype_name(v->storage.dtype)) + " key " + v->storage.key;
    case PKind::tensor: {
      std::string s = "tensor " + std::string(source_dtype_name(v->tensor.dtype)) + "[";
      for (size_t i = 0; i < v->tensor.sizes.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v->tensor.sizes[i]);
      return s + "]";
    }
    case PKind::record: return "Namespace[" + std::to_string(v->entries.size()) + "]";
    case PKind::opaque: return "opaque " + v->text;
  }
  return "?";
}

}  // namespace longrun::convert
