// The runner's ATen observer: a global RecordFunction callback (scope FUNCTION: every operator the
// dispatcher runs, whether Python, C++ or a load_inline extension called it) that counts, once armed,
// every operator and the operators outside the allow-list, into a page of shared memory the monitor
// reads directly (verifier/sandbox/observer.py owns the layout). An operator outside the aten namespace
// is torch's (mkl, mkldnn, quantized, prims, ... all compute) unless its namespace is one the monitor
// proved the candidate's own and wrote into the page. Loaded by the runner before any
// candidate code; armed once ModelNew is constructed and never disarmed, so nothing in the runner's
// process can tell a checked call from any other.
#include <ATen/record_function.h>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_set>

namespace {
struct Page {
  uint64_t magic;
  uint64_t total;      // operators seen while armed
  uint64_t forbidden;  // of which outside the allow-list
  uint64_t armed;
  char names[8][64];   // the first forbidden operators' names
  char pad[1024 - 32 - 8 * 64];
  char own[8][64];     // operator namespaces the monitor proved the candidate's own (written by the monitor)
};
Page* g_page = nullptr;
std::unordered_set<std::string>* g_allowed = nullptr;

bool own_namespace(const Page* page, const char* ns, size_t len) {
  for (int k = 0; k < 8; ++k) {
    const char* slot = page->own[k];
    if (slot[0] && std::strlen(slot) == len && std::strncmp(slot, ns, len) == 0) return true;
  }
  return false;
}

bool allowed(const Page* page, const char* name) {
  const char* sep = std::strstr(name, "::");
  if (!sep) return true;  // not an operator: a record function of another scope
  size_t len = sep - name;
  if (len == 4 && std::strncmp(name, "aten", 4) == 0) return g_allowed->count(std::string(sep + 2)) > 0;
  return own_namespace(page, name, len);  // any other namespace is torch's unless proven the candidate's
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  Page* page = g_page;
  if (!page || !page->armed) return nullptr;
  __atomic_fetch_add(&page->total, 1, __ATOMIC_RELAXED);
  const char* name = fn.name();
  if (!name || allowed(page, name)) return nullptr;
  uint64_t k = __atomic_fetch_add(&page->forbidden, 1, __ATOMIC_RELAXED);
  if (k < 8) std::strncpy(page->names[k], name, 63);
  return nullptr;
}

void split(const char* text, std::unordered_set<std::string>* into) {
  std::string s(text);
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) into->insert(s.substr(start, end - start));
    start = end + 1;
  }
}
}  // namespace

extern "C" int evokernel_observer_install(void* page, const char* allowed_ops) {
  if (g_page) return 1;
  g_allowed = new std::unordered_set<std::string>();
  split(allowed_ops, g_allowed);
  g_page = static_cast<Page*>(page);
  at::addGlobalCallback(at::RecordFunctionCallback(&on_start).scopes({at::RecordScope::FUNCTION}).needsInputs(false));
  return 0;
}

extern "C" void evokernel_observer_arm(void) {
  if (g_page) __atomic_store_n(&g_page->armed, 1, __ATOMIC_RELEASE);
}
