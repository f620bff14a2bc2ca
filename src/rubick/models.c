/* rubick/models.c — per-model numbers of the zoo's models for the
 * performance model (parameters, FLOPs and activation bytes per sample,
 * efficiencies), by name: the simulator's Rubick workload draws from them
 * and loomd's rubick policy looks up the model a job's "reconfig" names.
 *
 * The zoo's models (workloads/models/zoo.py) at the published full sizes
 * they are named after (ResNet-18/50, VGG-16 and MobileNetV2 at 224x224,
 * ViT-B/16, BERT-large at sequence 512, GPT-2 XL at 1024, a 2-layer LSTM
 * language model, DLRM with 540M embedding parameters): parameters and
 * FLOPs are the published figures (3 x forward for forward + backward,
 * 6 P T for transformers), activation bytes per sample and efficiencies
 * are rough fp16 values on an H100-class GPU (docs/scheduling.md). */
#include <string.h>

#include "loom/rubick.h"

static const loom_rubick_model_t models[] = {
    /* name, params, flops/sample, act bytes, recompute keep, mbs_half, mfu, cpu s/sample,
       host MiB */
    {"resnet18", 11.7e6, 5.4e9, 50e6, 0.3, 32, 0.05, 0.003, 4096},
    {"resnet50", 25.6e6, 12.3e9, 110e6, 0.3, 32, 0.06, 0.004, 4096},
    {"vgg16", 138e6, 46.5e9, 200e6, 0.3, 16, 0.12, 0.004, 4096},
    {"mobilenet_v2", 3.5e6, 0.9e9, 90e6, 0.3, 64, 0.02, 0.003, 4096},
    {"vit", 86e6, 52.8e9, 350e6, 0.15, 8, 0.30, 0.004, 4096},
    {"bert", 340e6, 1.04e12, 2.5e9, 0.10, 4, 0.40, 0.0002, 8192},
    {"gpt2", 1.56e9, 9.6e12, 12e9, 0.06, 2, 0.45, 0.0002, 16384},
    {"lstm", 66e6, 1.4e10, 40e6, 0.30, 64, 0.10, 0.0001, 4096},
    {"dlrm", 540e6, 0.6e9, 2e6, 1.0, 512, 0.05, 0.00002, 32768},
};
#define NMODELS (sizeof models / sizeof *models)

const loom_rubick_model_t *loom_rubick_models(size_t *n)
{
    *n = NMODELS;
    return models;
}

const loom_rubick_model_t *loom_rubick_model_find(const char *name)
{
    for (size_t i = 0; name && i < NMODELS; i++)
        if (strcmp(models[i].name, name) == 0)
            return &models[i];
    return NULL;
}
