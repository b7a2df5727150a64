/* cl_faults.c -- the OpenCL entry points attn calls, defined in the test
 * executable so that one chosen call fails (cl_faults.h). Each passes its
 * arguments on to the real function, found once with dlsym(RTLD_NEXT). */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "cl_faults.h"

#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_int armed;
static atomic_long calls, fail_at;
static _Atomic(const char *) failed;
static atomic_long live[CL_FAULTS_KINDS];

void cl_faults_reset(long at)
{
    atomic_store(&armed, 0);
    atomic_store(&calls, 0);
    atomic_store(&fail_at, at);
    atomic_store(&failed, NULL);
}

void cl_faults_arm(void) { atomic_store(&armed, 1); }
void cl_faults_disarm(void) { atomic_store(&armed, 0); }
long cl_faults_calls(void) { return atomic_load(&calls); }
const char *cl_faults_failed(void) { return atomic_load(&failed); }
long cl_faults_live(int kind) { return atomic_load(&live[kind]); }

const char *cl_faults_kind_name(int kind)
{
    static const char *const names[CL_FAULTS_KINDS] = {"mem", "kernel", "program",
                                                       "event", "queue", "context"};
    return names[kind];
}

/* Whether this call of name is the one to fail (counting it when armed). */
static int fail_now(const char *name)
{
    if (!atomic_load(&armed)) return 0;
    if (atomic_fetch_add(&calls, 1) + 1 != atomic_load(&fail_at)) return 0;
    atomic_store(&failed, name);
    return 1;
}

static void *real_fn(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "cl_faults: no real %s: %s\n", name, dlerror());
        abort();
    }
    return f;
}

/* The real function, looked up on first use. */
#define REAL(name)                                                                                 \
    static __typeof__(&name) real_##name;                                                          \
    if (!real_##name) real_##name = (__typeof__(&name))real_fn(#name)

static void count(int kind, long d) { atomic_fetch_add(&live[kind], d); }

/* An object-returning call that may fail: its error and NULL. */
#define FAIL_CREATE(name, errcode_ret, error)                                                      \
    do {                                                                                           \
        if (fail_now(#name)) {                                                                     \
            if (errcode_ret) *(errcode_ret) = (error);                                             \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

/* An enqueue with an event to return: it counts as one more event. */
static cl_int enqueued(cl_int err, cl_event *event)
{
    if (err == CL_SUCCESS && event) count(CL_FAULTS_EVENT, 1);
    return err;
}

/* ---- creating ---- */

CL_API_ENTRY cl_context CL_API_CALL
clCreateContext(const cl_context_properties *properties, cl_uint num_devices,
                const cl_device_id *devices,
                void(CL_CALLBACK *pfn_notify)(const char *, const void *, size_t, void *),
                void *user_data, cl_int *errcode_ret)
{
    REAL(clCreateContext);
    FAIL_CREATE(clCreateContext, errcode_ret, CL_OUT_OF_HOST_MEMORY);
    cl_context c = real_clCreateContext(properties, num_devices, devices, pfn_notify, user_data,
                                        errcode_ret);
    if (c) count(CL_FAULTS_CONTEXT, 1);
    return c;
}

CL_API_ENTRY cl_command_queue CL_API_CALL
clCreateCommandQueue(cl_context context, cl_device_id device,
                     cl_command_queue_properties properties, cl_int *errcode_ret)
{
    REAL(clCreateCommandQueue);
    FAIL_CREATE(clCreateCommandQueue, errcode_ret, CL_OUT_OF_RESOURCES);
    cl_command_queue q = real_clCreateCommandQueue(context, device, properties, errcode_ret);
    if (q) count(CL_FAULTS_QUEUE, 1);
    return q;
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size,
                                               void *host_ptr, cl_int *errcode_ret)
{
    REAL(clCreateBuffer);
    FAIL_CREATE(clCreateBuffer, errcode_ret, CL_MEM_OBJECT_ALLOCATION_FAILURE);
    cl_mem m = real_clCreateBuffer(context, flags, size, host_ptr, errcode_ret);
    if (m) count(CL_FAULTS_MEM, 1);
    return m;
}

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithSource(cl_context context, cl_uint n,
                                                              const char **strings,
                                                              const size_t *lengths,
                                                              cl_int *errcode_ret)
{
    REAL(clCreateProgramWithSource);
    FAIL_CREATE(clCreateProgramWithSource, errcode_ret, CL_OUT_OF_HOST_MEMORY);
    cl_program p = real_clCreateProgramWithSource(context, n, strings, lengths, errcode_ret);
    if (p) count(CL_FAULTS_PROGRAM, 1);
    return p;
}

CL_API_ENTRY cl_program CL_API_CALL
clCreateProgramWithBinary(cl_context context, cl_uint num_devices, const cl_device_id *device_list,
                          const size_t *lengths, const unsigned char **binaries,
                          cl_int *binary_status, cl_int *errcode_ret)
{
    REAL(clCreateProgramWithBinary);
    FAIL_CREATE(clCreateProgramWithBinary, errcode_ret, CL_OUT_OF_HOST_MEMORY);
    cl_program p = real_clCreateProgramWithBinary(context, num_devices, device_list, lengths,
                                                  binaries, binary_status, errcode_ret);
    if (p) count(CL_FAULTS_PROGRAM, 1);
    return p;
}

CL_API_ENTRY cl_kernel CL_API_CALL clCreateKernel(cl_program program, const char *kernel_name,
                                                  cl_int *errcode_ret)
{
    REAL(clCreateKernel);
    FAIL_CREATE(clCreateKernel, errcode_ret, CL_OUT_OF_RESOURCES);
    cl_kernel k = real_clCreateKernel(program, kernel_name, errcode_ret);
    if (k) count(CL_FAULTS_KERNEL, 1);
    return k;
}

/* ---- building, arguments, information a caller depends on ---- */

CL_API_ENTRY cl_int CL_API_CALL
clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
               const char *options, void(CL_CALLBACK *pfn_notify)(cl_program, void *),
               void *user_data)
{
    REAL(clBuildProgram);
    if (fail_now("clBuildProgram")) return CL_OUT_OF_HOST_MEMORY;
    return real_clBuildProgram(program, num_devices, device_list, options, pfn_notify, user_data);
}

CL_API_ENTRY cl_int CL_API_CALL clSetKernelArg(cl_kernel kernel, cl_uint arg_index,
                                               size_t arg_size, const void *arg_value)
{
    REAL(clSetKernelArg);
    if (fail_now("clSetKernelArg")) return CL_OUT_OF_RESOURCES;
    return real_clSetKernelArg(kernel, arg_index, arg_size, arg_value);
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramInfo(cl_program program, cl_program_info param_name,
                                                 size_t size, void *value, size_t *size_ret)
{
    REAL(clGetProgramInfo);
    if (fail_now("clGetProgramInfo")) return CL_OUT_OF_HOST_MEMORY;
    return real_clGetProgramInfo(program, param_name, size, value, size_ret);
}

/* The information queries: a failure writes nothing (a caller that goes
 * on with the value it did not get reads what it had before). */
#define INFO_QUERY(name, obj_type, info_type)                                                      \
    CL_API_ENTRY cl_int CL_API_CALL name(obj_type obj, info_type param, size_t size, void *value,  \
                                         size_t *size_ret)                                         \
    {                                                                                              \
        REAL(name);                                                                                \
        if (fail_now(#name)) return CL_OUT_OF_HOST_MEMORY;                                         \
        return real_##name(obj, param, size, value, size_ret);                                     \
    }

INFO_QUERY(clGetPlatformInfo, cl_platform_id, cl_platform_info)
INFO_QUERY(clGetDeviceInfo, cl_device_id, cl_device_info)
INFO_QUERY(clGetCommandQueueInfo, cl_command_queue, cl_command_queue_info)
INFO_QUERY(clGetMemObjectInfo, cl_mem, cl_mem_info)
INFO_QUERY(clGetKernelInfo, cl_kernel, cl_kernel_info)
INFO_QUERY(clGetEventProfilingInfo, cl_event, cl_profiling_info)

CL_API_ENTRY cl_int CL_API_CALL clGetProgramBuildInfo(cl_program program, cl_device_id device,
                                                      cl_program_build_info param, size_t size,
                                                      void *value, size_t *size_ret)
{
    REAL(clGetProgramBuildInfo);
    if (fail_now("clGetProgramBuildInfo")) return CL_OUT_OF_HOST_MEMORY;
    return real_clGetProgramBuildInfo(program, device, param, size, value, size_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetKernelWorkGroupInfo(cl_kernel kernel, cl_device_id device,
                                                         cl_kernel_work_group_info param,
                                                         size_t size, void *value,
                                                         size_t *size_ret)
{
    REAL(clGetKernelWorkGroupInfo);
    if (fail_now("clGetKernelWorkGroupInfo")) return CL_OUT_OF_HOST_MEMORY;
    return real_clGetKernelWorkGroupInfo(kernel, device, param, size, value, size_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformIDs(cl_uint num_entries, cl_platform_id *platforms,
                                                 cl_uint *num_platforms)
{
    REAL(clGetPlatformIDs);
    if (fail_now("clGetPlatformIDs")) return CL_OUT_OF_HOST_MEMORY;
    return real_clGetPlatformIDs(num_entries, platforms, num_platforms);
}

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceIDs(cl_platform_id platform, cl_device_type type,
                                               cl_uint num_entries, cl_device_id *devices,
                                               cl_uint *num_devices)
{
    REAL(clGetDeviceIDs);
    if (fail_now("clGetDeviceIDs")) return CL_OUT_OF_HOST_MEMORY;
    return real_clGetDeviceIDs(platform, type, num_entries, devices, num_devices);
}

/* ---- enqueueing and waiting ---- */

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim,
                       const size_t *global_offset, const size_t *global_size,
                       const size_t *local_size, cl_uint nwait, const cl_event *wait,
                       cl_event *event)
{
    REAL(clEnqueueNDRangeKernel);
    if (fail_now("clEnqueueNDRangeKernel")) return CL_OUT_OF_RESOURCES;
    return enqueued(real_clEnqueueNDRangeKernel(queue, kernel, work_dim, global_offset,
                                                global_size, local_size, nwait, wait, event),
                    event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueReadBuffer(cl_command_queue queue, cl_mem buffer,
                                                    cl_bool blocking, size_t offset, size_t size,
                                                    void *ptr, cl_uint nwait,
                                                    const cl_event *wait, cl_event *event)
{
    REAL(clEnqueueReadBuffer);
    if (fail_now("clEnqueueReadBuffer")) return CL_OUT_OF_RESOURCES;
    return enqueued(real_clEnqueueReadBuffer(queue, buffer, blocking, offset, size, ptr, nwait,
                                             wait, event),
                    event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBuffer(cl_command_queue queue, cl_mem buffer,
                                                     cl_bool blocking, size_t offset, size_t size,
                                                     const void *ptr, cl_uint nwait,
                                                     const cl_event *wait, cl_event *event)
{
    REAL(clEnqueueWriteBuffer);
    if (fail_now("clEnqueueWriteBuffer")) return CL_OUT_OF_RESOURCES;
    return enqueued(real_clEnqueueWriteBuffer(queue, buffer, blocking, offset, size, ptr, nwait,
                                              wait, event),
                    event);
}

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueReadBufferRect(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                        const size_t *buffer_origin, const size_t *host_origin,
                        const size_t *region, size_t buffer_row_pitch, size_t buffer_slice_pitch,
                        size_t host_row_pitch, size_t host_slice_pitch, void *ptr, cl_uint nwait,
                        const cl_event *wait, cl_event *event)
{
    REAL(clEnqueueReadBufferRect);
    if (fail_now("clEnqueueReadBufferRect")) return CL_OUT_OF_RESOURCES;
    return enqueued(real_clEnqueueReadBufferRect(queue, buffer, blocking, buffer_origin,
                                                 host_origin, region, buffer_row_pitch,
                                                 buffer_slice_pitch, host_row_pitch,
                                                 host_slice_pitch, ptr, nwait, wait, event),
                    event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueCopyBuffer(cl_command_queue queue, cl_mem src,
                                                    cl_mem dst, size_t src_offset,
                                                    size_t dst_offset, size_t size, cl_uint nwait,
                                                    const cl_event *wait, cl_event *event)
{
    REAL(clEnqueueCopyBuffer);
    if (fail_now("clEnqueueCopyBuffer")) return CL_OUT_OF_RESOURCES;
    return enqueued(real_clEnqueueCopyBuffer(queue, src, dst, src_offset, dst_offset, size, nwait,
                                             wait, event),
                    event);
}

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueCopyBufferRect(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
                        const size_t *dst_origin, const size_t *region, size_t src_row_pitch,
                        size_t src_slice_pitch, size_t dst_row_pitch, size_t dst_slice_pitch,
                        cl_uint nwait, const cl_event *wait, cl_event *event)
{
    REAL(clEnqueueCopyBufferRect);
    if (fail_now("clEnqueueCopyBufferRect")) return CL_OUT_OF_RESOURCES;
    return enqueued(real_clEnqueueCopyBufferRect(queue, src, dst, src_origin, dst_origin, region,
                                                 src_row_pitch, src_slice_pitch, dst_row_pitch,
                                                 dst_slice_pitch, nwait, wait, event),
                    event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueFillBuffer(cl_command_queue queue, cl_mem buffer,
                                                    const void *pattern, size_t pattern_size,
                                                    size_t offset, size_t size, cl_uint nwait,
                                                    const cl_event *wait, cl_event *event)
{
    REAL(clEnqueueFillBuffer);
    if (fail_now("clEnqueueFillBuffer")) return CL_OUT_OF_RESOURCES;
    return enqueued(real_clEnqueueFillBuffer(queue, buffer, pattern, pattern_size, offset, size,
                                             nwait, wait, event),
                    event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueMarkerWithWaitList(cl_command_queue queue, cl_uint nwait,
                                                            const cl_event *wait, cl_event *event)
{
    REAL(clEnqueueMarkerWithWaitList);
    if (fail_now("clEnqueueMarkerWithWaitList")) return CL_OUT_OF_RESOURCES;
    return enqueued(real_clEnqueueMarkerWithWaitList(queue, nwait, wait, event), event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueBarrierWithWaitList(cl_command_queue queue,
                                                             cl_uint nwait, const cl_event *wait,
                                                             cl_event *event)
{
    REAL(clEnqueueBarrierWithWaitList);
    if (fail_now("clEnqueueBarrierWithWaitList")) return CL_OUT_OF_RESOURCES;
    return enqueued(real_clEnqueueBarrierWithWaitList(queue, nwait, wait, event), event);
}

CL_API_ENTRY cl_int CL_API_CALL clFinish(cl_command_queue queue)
{
    REAL(clFinish);
    if (fail_now("clFinish")) return CL_OUT_OF_RESOURCES;
    return real_clFinish(queue);
}

CL_API_ENTRY cl_int CL_API_CALL clWaitForEvents(cl_uint n, const cl_event *events)
{
    REAL(clWaitForEvents);
    if (fail_now("clWaitForEvents")) return CL_OUT_OF_RESOURCES;
    return real_clWaitForEvents(n, events);
}

/* ---- retaining and releasing (never failed, always counted) ---- */

#define RETAIN_RELEASE(type, suffix, kind)                                                         \
    CL_API_ENTRY cl_int CL_API_CALL clRetain##suffix(type x)                                       \
    {                                                                                              \
        REAL(clRetain##suffix);                                                                    \
        const cl_int err = real_clRetain##suffix(x);                                               \
        if (err == CL_SUCCESS) count(kind, 1);                                                     \
        return err;                                                                                \
    }                                                                                              \
    CL_API_ENTRY cl_int CL_API_CALL clRelease##suffix(type x)                                      \
    {                                                                                              \
        REAL(clRelease##suffix);                                                                   \
        const cl_int err = real_clRelease##suffix(x);                                              \
        if (err == CL_SUCCESS) count(kind, -1);                                                    \
        return err;                                                                                \
    }

RETAIN_RELEASE(cl_mem, MemObject, CL_FAULTS_MEM)
RETAIN_RELEASE(cl_kernel, Kernel, CL_FAULTS_KERNEL)
RETAIN_RELEASE(cl_program, Program, CL_FAULTS_PROGRAM)
RETAIN_RELEASE(cl_event, Event, CL_FAULTS_EVENT)
RETAIN_RELEASE(cl_command_queue, CommandQueue, CL_FAULTS_QUEUE)
RETAIN_RELEASE(cl_context, Context, CL_FAULTS_CONTEXT)
