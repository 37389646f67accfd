// Runs backends/_cuda_gemm.py's CUDA source on the CPU: each block's 256 threads are
// std::threads and __syncthreads() is a std::barrier, so the tiling, the bounds checks
// and the stride arithmetic execute as on a GPU. tests/test_cuda_graphs.py appends
// the kernel source between the two halves (marker below) and compares with a plain
// triple loop. Exit status 1 on any mismatch.

#include <barrier>
#include <thread>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#define __global__
#define __shared__ static
struct dim3_ {int x, y, z;};
thread_local dim3_ threadIdx;
thread_local dim3_ blockIdx;
std::barrier<>* bar;
static void __syncthreads() { bar->arrive_and_wait(); }
// @@KERNEL@@

int main() {
    srand(1);
    int shapes[][5] = {{1,1,1,1,0},{17,5,33,1,0},{20,17,40,1,1},{3,20,7,3,0},{16,16,16,2,2},{5,4,0,1,0},{18,20,19,2,3}};
    int bad = 0;
    for (auto& s : shapes) {
        int M=s[0], N=s[1], K=s[2], Bt=s[3], mode=s[4];
        std::vector<double> A(Bt*M*K+1), B(Bt*K*N+1), C(Bt*M*N, -7);
        for (auto& v : A) v = rand() / (double)RAND_MAX - 0.5;
        for (auto& v : B) v = rand() / (double)RAND_MAX - 0.5;
        // element strides: mode 1 = B transposed in memory, 2 = A transposed, 3 = both
        long long sab=M*K, sam=K, sak=1, sbb=K*N, sbk=N, sbn=1;
        if (mode & 2) { sam = 1; sak = M; }
        if (mode & 1) { sbk = 1; sbn = K; }
        int gx=(N+15)/16, gy=(M+15)/16;
        // one block's 256 threads, kept for every block of the launch in turn
        std::barrier<> b(256); bar = &b;
        std::vector<std::thread> th;
        for (int t=0; t<256; ++t)
            th.emplace_back([&, t]{
                threadIdx = {t % 16, t / 16, 0};
                for (int z=0; z<Bt; ++z) for (int by=0; by<gy; ++by) for (int bx=0; bx<gx; ++bx) {
                    blockIdx = {bx, by, 0};
                    gpunda_gemm(A.data(), B.data(), C.data(), M, N, K, sab, sam, sak, sbb, sbk, sbn, z);
                    bar->arrive_and_wait();     // the block ends before the next one starts
                }
            });
        for (auto& t : th) t.join();
        double err = 0;
        for (int z=0; z<Bt; ++z) for (int m=0; m<M; ++m) for (int n=0; n<N; ++n) {
            double r = 0;
            for (int k=0; k<K; ++k) r += A[z*sab + m*sam + k*sak] * B[z*sbb + k*sbk + n*sbn];
            err = std::fmax(err, std::fabs(r - C[(z*M+m)*N+n]));
        }
        printf("M=%d N=%d K=%d batch=%d mode=%d maxerr=%g\n", M, N, K, Bt, mode, err);
        if (err > 1e-12) bad = 1;
    }
    return bad;
}
