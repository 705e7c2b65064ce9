// safetensors checkpoints: one file, or shards listed by model.safetensors.index.json. Headers are validated
// completely at open (offsets, sizes, dtypes) so that later reads cannot go out of bounds.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/dtype.h"
#include "io/mapped_file.h"

namespace ds4 {

struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  std::string file;  // the file it lives in, for error messages

  int64_t numel() const;
  std::string shape_str() const;
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);  // throws Error(Io|Format|Unsupported)
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const std::string& path() const { return file_->path(); }

 private:
  std::shared_ptr<MappedFile> file_;
  std::map<std::string, TensorView> tensors_;
};

// All tensors of a checkpoint directory by name.
class TensorStore {
 public:
  static TensorStore open_dir(const std::string& dir);  // model.safetensors or the index + shards
  const TensorView* find(const std::string& name) const;
  const TensorView& get(const std::string& name) const;  // throws Error(MissingTensor)
  std::vector<std::string> names() const;
  size_t size() const { return index_.size(); }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> index_;
};

// Converts any float tensor (F32/F16/BF16) to float32; throws Error(Unsupported) for other dtypes.
std::vector<float> tensor_to_f32(const TensorView& t);
std::vector<int64_t> tensor_to_i64(const TensorView& t);

}  // namespace ds4
