// The memory bandwidth a decode step is measured against: the device's HBM limit from its specification (peak
// memory clock x bus width, as the driver reports them) and a device-to-device copy measured on the spot.
#pragma once
#include <string>

namespace ds4::cuda {

struct Bandwidth {
  std::string device;
  double spec_gbs = 0;  // 2 (DDR) x memory clock x bus width
  double copy_gbs = 0;  // bytes read + written per second by cudaMemcpy of 2 GiB, best of 5
};

Bandwidth measure_bandwidth(int device);

}  // namespace ds4::cuda
